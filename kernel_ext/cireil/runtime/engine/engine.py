"""The agent's engine: which provider and model a turn uses, one turn at a time, and turns nobody typed.

Turns of one agent never overlap: a turn queued by `invoke` or fired by a scheduled job waits for
the running one. engine.toml is read at the start of every turn, so an edit applies to the next one.
Provider clients are kept between turns (their connections too) and closed with the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.loop import RUNTIME
from ..base.secrets import mask_header, mask_url
from ..config.cireil_config import DEFAULT_LIMITS, Limits, load_limits
from ..sessions import messages as msgs
from .turn import EventSink, Turn, TurnOutcome

if TYPE_CHECKING:
    from ..config.engine_config import EngineConfig, ModelConfig, ProviderConfig
    from ..sessions.state import Session
    from ..toolkit.tool import Tool
    from .host import TurnHost
    from .httpcall import HttpProvider
    from .openai import ModelRequest


# What a turn talks to in place of the provider engine.toml chooses (a replay's scripted server, a fork's
# recorded replies), made from what was chosen: (provider, model, model settings) -> a client with `complete`.
ClientFactory = Callable[["ProviderConfig", str, "ModelConfig"], Any]


@dataclass
class PreparedRequest:
    """The next model request and the parts it was assembled from (what `%cireil prompt` shows)."""

    model_request: ModelRequest
    assembled: Any  # engine.assemble's result: system, history, opened files, metadata, estimate
    provider: ProviderConfig
    model_cfg: ModelConfig
    estimate: int
    notes: list[str]
    agent_dir: Path | None = None  # where an openai-codex login is looked for

    @property
    def body(self) -> dict:
        """Exactly what would be POSTed (made on demand: a turn's provider builds its own)."""
        return request_body(self.provider, self.model_cfg, self.model_request)

    def _client(self) -> HttpProvider:
        return client_class(self.provider.kind)(
            self.provider, self.model_request.model, model_cfg=self.model_cfg, agent_dir=self.agent_dir
        )

    @property
    def url(self) -> str:
        """Where the request goes, with the credentials apiBase may carry masked (it is shown and saved)."""
        return mask_url(self._client().url)

    @property
    def headers(self) -> list[tuple[str, str]]:
        """The request's headers with every key replaced by where it comes from (never read here) and each
        customHeaders value masked (`•••• (N chars)`): the view is saved in the notebook."""
        configured = {name.lower() for name in self.provider.custom_headers}
        return [
            (name, mask_header(name, value, configured) if name.lower() in configured else value)
            for name, value in self._client().preview_headers(self.model_request.session_id)
        ]


def request_body(provider: ProviderConfig, model_cfg: ModelConfig, request: ModelRequest) -> dict:
    """The body a provider of this kind POSTs for `request`, as a whole (not streamed) request."""
    if provider.kind == "anthropic":
        from .anthropic import build_anthropic_body

        return build_anthropic_body(provider, model_cfg, request, stream=False)
    if provider.kind == "openai-codex":
        from .codex import build_codex_body

        return build_codex_body(provider, model_cfg, request)
    from .openai import build_request_body

    return build_request_body(provider, model_cfg, request, stream=False)


def client_class(kind: str) -> type[HttpProvider]:
    """The provider class of a kind; one module per kind, imported only when something uses it."""
    if kind == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider
    if kind == "openai-codex":
        from .codex import CodexProvider

        return CodexProvider
    from .openai import OpenAIProvider

    return OpenAIProvider


class Engine:
    def __init__(self, host: TurnHost) -> None:
        self.host = host  # the agent, seen only through what a turn needs of it
        self._lock: asyncio.Lock | None = None  # created on the runtime loop, where turns run
        self._clients: dict[tuple, HttpProvider] = {}
        self._token_cache: dict = {}
        from .keypool import KeyPools

        self._pools = KeyPools()  # rate-limited keys stay benched across turns, shared by equal key lists
        self._limits: Limits = DEFAULT_LIMITS  # [limits] of config/cireil.toml, read at the start of each turn
        self.background: list[dict] = []  # events of turns nobody is watching (scheduled, invoked)
        self.on_background: Callable[[dict], None] | None = None
        self._tasks: set[asyncio.Task] = set()
        from .scheduler import Scheduler

        self.scheduler = Scheduler(self)
        from .models import ModelCatalog

        self.models = ModelCatalog()  # the providers' model lists, asked once per load

    # -- configuration ------------------------------------------------------------------------------
    def config(self) -> EngineConfig:
        from ..config.engine_config import load_engine_config

        return load_engine_config(self.host.directory)

    def resolve(
        self, session: Session, provider: str | None = None, model: str | None = None
    ) -> tuple[ProviderConfig, str, ModelConfig, list[str]]:
        """Provider, model and model table as the original chooses them (upstream-formats.md §2.9).

        A provider of a kind cireil does not speak yet fails here, before anything is sent or committed."""
        from ..base.errors import ConfigError, ConfigIssue
        from ..config.engine_config import ENGINE_FILE

        choice = self.config().choose(provider, model, selected_provider=session.provider, selected_model=session.model)
        problem = choice.provider.unsupported()
        if problem is not None:
            raise ConfigError([ConfigIssue(ENGINE_FILE, choice.provider.line, problem)])
        return choice.provider, choice.model, choice.model_cfg, choice.notices

    def check_credentials(self, provider: ProviderConfig) -> None:
        """A missing openai-codex login or an unset key variable fails here, before anything is committed."""
        if provider.kind == "openai-codex":
            self._check_login(provider)
        elif provider.api_keys:
            provider.api_keys[0].resolve()

    async def fit_window(
        self, provider: ProviderConfig, model: str, model_cfg: ModelConfig, *, ask: bool = True
    ) -> ModelConfig:
        """The model's settings with the context window its provider's model list gives, when engine.toml
        gives none (as the original); `ask=False` only looks at a list asked for earlier (no network)."""
        if model_cfg.context_window is not None:
            return model_cfg
        listing = await self.models.context_window(provider) if ask else self.models.cached(provider)
        window = listing.window_of(model) if listing is not None else None
        return replace(model_cfg, context_window=window) if window else model_cfg

    def _check_login(self, provider: ProviderConfig) -> None:
        from ..base.errors import ConfigError, ConfigIssue
        from ..config.engine_config import ENGINE_FILE
        from .codex_auth import login_problem

        problem = login_problem(self.host.directory, provider.auth_id)
        if problem is not None:
            name, line, message = problem
            where = f"{ENGINE_FILE}:{provider.line}" if provider.line else ENGINE_FILE
            raise ConfigError(
                [ConfigIssue(name, line, f"{message} (the OAuth login of provider '{provider.name}', {where})")]
            )

    def client(self, provider: ProviderConfig, model: str, model_cfg: ModelConfig | None = None) -> HttpProvider:
        """The provider client of this model, kept between turns (its connections too); an edit of the
        provider's settings in engine.toml gets a fresh one, and the old one's connections are closed."""
        key = (provider.name, model)
        found = self._clients.get(key)
        if found is not None and (found.provider != provider or found.model_cfg != model_cfg):
            closing = asyncio.ensure_future(found.aclose())  # called on the runtime loop, by run_turn
            self._tasks.add(closing)
            closing.add_done_callback(self._tasks.discard)
            found = None
        if found is None:
            make = client_class(provider.kind)
            found = make(provider, model, model_cfg=model_cfg, pools=self._pools, agent_dir=self.host.directory)
            self._clients[key] = found
        found.limits = self._limits
        return found

    # -- requests -----------------------------------------------------------------------------------
    def build_request(
        self,
        session: Session,
        provider: ProviderConfig,
        model: str,
        model_cfg: ModelConfig,
        tools: dict[str, Tool],
        disabled: set[str] = frozenset(),  # type: ignore[assignment]
        *,
        close_missing: bool = True,
        now: datetime | None = None,
    ) -> PreparedRequest:
        from ..toolkit.registry import path_effects
        from .assemble import assemble
        from .openai import ModelRequest

        host = self.host
        assembled = assemble(
            layout=host.layout,
            session=session,
            paths=host.sandbox_paths(session),
            conditions=host.conditions,
            rule_context=host.rule_context(session),
            model_cfg=model_cfg,
            max_turns=provider.max_turns,
            token_cache=self._token_cache,
            close_missing=close_missing,
            path_effects=path_effects(tools.values()),
            result_limit=host.result_limit,  # rows stored before results were cut are cut for the model too
            now=now,
        )
        if close_missing:  # a real model call: pruning moved the cursor (a preview changes nothing)
            session.cursor = assembled.cursor
        request = ModelRequest(
            system=assembled.system,
            messages=assembled.messages,
            tools=[
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for name, t in tools.items()
                if name not in disabled
            ],
            session_id=session.id,
            model=model,
        )
        return PreparedRequest(
            request, assembled, provider, model_cfg, assembled.estimate, list(assembled.notes), host.directory
        )

    def preview(
        self, session: Session, provider: str | None = None, model: str | None = None, *, now: datetime | None = None
    ) -> PreparedRequest:
        """The request the next turn's first model call would send, changing nothing; `now` is the time its
        metadata says (a request rebuilt for a past model call, attach/reconstruct.py, gives that call's)."""
        chosen, model_name, model_cfg, _ = self.resolve(session, provider, model)
        listing = self.models.cached(chosen) if model_cfg.context_window is None else None
        if listing is not None and listing.window_of(model_name):  # a preview never waits for the network
            model_cfg = replace(model_cfg, context_window=listing.window_of(model_name))
        self.host.refresh_quietly()
        return self.build_request(
            session, chosen, model_name, model_cfg, self.host.offered_tools(session), close_missing=False, now=now
        )

    # -- turns --------------------------------------------------------------------------------------
    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """The agent's one turn at a time: no other turn (nor a main-session job) runs until the block ends."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            yield

    async def run_turn(
        self,
        session: Session,
        user: dict | None,
        *,
        on_event: EventSink,
        provider: str | None = None,
        model: str | None = None,
        persist: bool = True,
        on_tool_call: Any = None,
        client: ClientFactory | None = None,
        offline: bool = False,
        record: bool = True,
    ) -> TurnOutcome:
        """One turn of `session`, alone. `client` puts something else in front of the chosen provider (see
        ClientFactory); `offline` then checks no credentials and asks no provider for its context window (a list
        asked earlier still counts); `record=False` keeps the turn recorder out (a replay). A provider gone from
        engine.toml since a recorded turn is the default one again, with a notice (EngineConfig.choose)."""
        async with self.exclusive():
            from ..sessions.store import SessionReadOnly

            if session.platform in ("discord", "matrix"):  # refused before the model is called or anything stored
                raise SessionReadOnly(
                    f"session {session.id} is a {session.platform.title()} session: cireil has no {session.platform} "
                    f"channel to answer in, so it runs no turn there; read what the original stored with "
                    f"read-session, and see the request it sends with agent.prompt(session={session.id!r})"
                )
            store = self.host.store
            reason = store.read_only_reason(session) if store is not None else None
            if reason is not None:  # refused before the model is called or anything is stored (§6.3)
                raise SessionReadOnly(reason)
            conflict = store.conflict_reason(session) if store is not None else None
            if conflict is not None:
                from ..sessions.store import SessionConflict

                self.host.forget_session(session.id)
                raise SessionConflict(conflict)
            notices = self.host.refresh()  # tools.toml re-read now; this turn keeps the set it gets
            chosen, model_name, model_cfg, more = self.resolve(session, provider, model)
            # like engine.toml, read at every turn; a wrong limit fails here, before anything is committed
            self._limits = limits = load_limits(self.host.directory)
            if not offline:
                self.check_credentials(chosen)
            model_cfg = await self.fit_window(chosen, model_name, model_cfg, ask=not offline)
            if record:
                on_event = self.host.observe_turn(session.id, on_event)  # the turn recorder's tap
            make = client or self.client
            from .httpcall import HttpProvider

            model_client = make(chosen, model_name, model_cfg)
            if isinstance(model_client, HttpProvider):  # a replay's scripted client too
                model_client.limits = limits
            turn = Turn(
                session,
                host=self.host,
                build_request=self.build_request,
                on_event=on_event,
                provider=chosen,
                model=model_name,
                model_cfg=model_cfg,
                client=model_client,
                tools=self.host.offered_tools(session),  # the session's grant filters what is offered
                notices=notices + more,
                persist=persist,
                max_steps=limits.max_steps,
            )
            from ..sessions.store import SessionConflict

            turn.on_tool_call = on_tool_call  # step mode from Python (engine/toolhook.py)
            try:
                return await turn.run(user)
            except SessionConflict:  # another process wrote this session: continue from what it stored
                self.host.forget_session(session.id)
                raise

    @property
    def busy(self) -> bool:
        """A turn is running (a main-session cron job is then skipped, as the original)."""
        return self._lock is not None and self._lock.locked()

    def background_event(self, event: dict) -> None:
        """An event of a turn nobody watches (scheduled, invoked, delivered): kept, and passed to on_background."""
        if event.get("type") in ("respond", "announce", "end", "notice"):
            self.background.append(event)
            del self.background[:-200]  # bounded: nobody may ever look
        if self.on_background is not None:
            self.on_background(event)

    def spawn(self, coro: Any) -> None:
        """Run a background turn on the runtime loop; it waits for the running turn to end."""

        def start() -> None:
            task = asyncio.ensure_future(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        loop = RUNTIME.loop()
        if RUNTIME.in_loop_thread():
            start()
        else:
            loop.call_soon_threadsafe(start)

    def queue_turn(self, session_id: str, prompt: str, *, source: str | None = None) -> None:
        async def invoked() -> None:
            session = self.host.session_for(session_id)
            user = msgs.user_message(prompt, invokedFrom=source) if source else msgs.user_message(prompt)
            try:
                await self.run_turn(session, user, on_event=self.background_event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.background_event({"type": "notice", "text": f"invoked turn in {session_id} failed: {exc}"})

        self.spawn(invoked())

    def deliver(self, target: str, content: str, *, attachments: Sequence[str] = (), source: str | None = None) -> None:
        """Put a message from another session (or a scheduled job) into `target`'s history."""
        session = self.host.session_for(target)
        message = msgs.assistant_message([{"type": "text", "text": content}], deliveredFrom=source)
        if attachments:
            message["sentAttachments"] = list(attachments)
        session.history.append(message)
        if self.host.store is not None:
            self.host.store.commit(session, [message])
        self.background_event({"type": "delivered", "sessionId": target, "fromSessionId": source, "content": content})

    async def aclose(self) -> None:
        self.scheduler.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
