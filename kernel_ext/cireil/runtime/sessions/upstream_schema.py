"""The original runtime's sessions.db schema: its six drizzle migrations and their bookkeeping rows.

upstream-formats.md §4.2–4.3. The SQL texts are the migration files byte for byte (their SHA-256 is
the `hash` drizzle records), so a database created here is the one the original would create, and
its migrator finds nothing left to do. Nothing here ever alters an existing database.
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime

BREAKPOINT = "--> statement-breakpoint"

# (folder name, created_at epoch ms, migration.sql text)
MIGRATIONS: tuple[tuple[str, int, str], ...] = (
    (
        "20260215093206_sour_red_shift",
        1771147926000,
        "CREATE TABLE IF NOT EXISTS `sessions` (\n\t`id` text PRIMARY KEY NOT NULL,\n\t`channel` text NOT NULL,\n"
        "\t`meta` text NOT NULL,\n\t`history` text NOT NULL,\n\t`opened_files` text NOT NULL\n);\n",
    ),
    (
        "20260215093654_amusing_the_hunter",
        1771148214000,
        "CREATE TABLE IF NOT EXISTS `images` (\n\t`id` text NOT NULL,\n\t`session_id` text NOT NULL,\n"
        "\t`media_type` text NOT NULL,\n\tPRIMARY KEY(`id`, `session_id`),\n\tFOREIGN KEY (`session_id`) "
        "REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE no action\n);\n",
    ),
    (
        "20260218124035_awesome_rumiko_fujikawa",
        1771418435000,
        "CREATE TABLE IF NOT EXISTS `cron_jobs` (\n\t`job_id` text PRIMARY KEY NOT NULL,\n\t`type` text NOT NULL,\n"
        "\t`config` text,\n\t`last_run` text,\n\t`next_run` text,\n\t`status` text DEFAULT 'pending' NOT NULL,\n"
        "\t`retry_count` integer DEFAULT 0 NOT NULL,\n\t`created_at` text NOT NULL\n);\n",
    ),
    (
        "20260219150000_add_last_activity",
        1771513200000,
        "ALTER TABLE `sessions` ADD COLUMN `last_activity` text;\n",
    ),
    (
        "20260418221350_add_history_cursor",
        1776550430000,
        'ALTER TABLE "sessions" ADD COLUMN "history_cursor" integer DEFAULT 0 NOT NULL;\n',
    ),
    (
        "20260505072039_misty_micromacro",
        1777965639000,
        "CREATE TABLE `summaries` (\n\t`id` integer PRIMARY KEY AUTOINCREMENT,\n\t`session_id` text NOT NULL,\n"
        "\t`slug` text NOT NULL,\n\t`display_name` text NOT NULL,\n\t`start_message_id` text NOT NULL,\n"
        "\t`end_message_id` text NOT NULL,\n\t`preserve` text DEFAULT '[]' NOT NULL,\n\t`summary` text NOT NULL,\n"
        "\t`created_at` integer NOT NULL,\n\tCONSTRAINT `fk_summaries_session_id_sessions_id_fk` FOREIGN KEY "
        "(`session_id`) REFERENCES `sessions`(`id`) ON DELETE CASCADE\n);\n--> statement-breakpoint\n"
        "ALTER TABLE `sessions` ADD `active_file_sections` text DEFAULT '{}' NOT NULL;--> statement-breakpoint\n"
        "CREATE UNIQUE INDEX `summaries_session_slug_idx` ON `summaries` (`session_id`,`slug`);",
    ),
)
MIGRATION_NAMES = tuple(name for name, _, _ in MIGRATIONS)

BOOKKEEPING_DDL = (
    'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (\n\tid INTEGER PRIMARY KEY,\n\thash text NOT NULL,\n'
    "\tcreated_at numeric,\n\tname text,\n\tapplied_at TEXT\n)"
)

SESSION_COLUMNS = (
    "id",
    "channel",
    "meta",
    "history",
    "opened_files",
    "last_activity",
    "history_cursor",
    "active_file_sections",
)
UPSTREAM_TABLES = ("sessions", "images", "summaries", "cron_jobs")
# cireil's own schema before it kept the original's (one row per message, FTS index inside)
OLD_CIREIL_TABLES = ("messages", "search", "attachments")


def migration_hash(sql: str) -> str:
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()


def iso_ms(moment: datetime) -> str:
    """`Date.toISOString()`: UTC, milliseconds, `Z` (list-sessions sorts these as strings)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_now() -> str:
    return iso_ms(datetime.now(UTC))


def create(db: sqlite3.Connection) -> None:
    """Make an empty database the original's: every migration, then its bookkeeping row, in one transaction.

    `db` must be in autocommit mode (isolation_level=None) and empty."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(BOOKKEEPING_DDL)
        applied_at = iso_now()
        for name, created_at, sql in MIGRATIONS:
            for statement in sql.split(BREAKPOINT):
                if statement.strip():
                    db.execute(statement)
            db.execute(
                'INSERT INTO "__drizzle_migrations" ("hash", "created_at", "name", "applied_at") VALUES (?, ?, ?, ?)',
                (migration_hash(sql), created_at, name, applied_at),
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]


def is_old_cireil(found: set[str], session_columns: list[str]) -> bool:
    return "messages" in found and "platform" in session_columns


def schema_problem(db: sqlite3.Connection) -> str | None:
    """Why cireil cannot use this database as the original's, or None when it can (read defensively)."""
    found = tables(db)
    if "sessions" not in found:
        return "it has no sessions table"
    have = columns(db, "sessions")
    missing = [c for c in ("id", "channel", "meta", "history", "opened_files") if c not in have]
    if missing:
        return f"its sessions table lacks {', '.join(missing)}"
    return None


def is_current(db: sqlite3.Connection) -> bool:
    """upstream-formats §4.3: bookkeeping table with a `name` column holding all six names."""
    if "__drizzle_migrations" not in tables(db):
        return False
    if "name" not in columns(db, "__drizzle_migrations"):
        return False
    names = {r[0] for r in db.execute('SELECT name FROM "__drizzle_migrations"')}
    return all(n in names for n in MIGRATION_NAMES)
