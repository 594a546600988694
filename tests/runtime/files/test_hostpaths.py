"""hostpaths.trusted_realpath: realpath, except through a symlink that lies where a command can write."""

from __future__ import annotations

import os

import pytest

from cireil.runtime.files.hostpaths import PlantedLink, trusted_realpath


def test_it_agrees_with_realpath_where_nothing_is_untrusted(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "abs").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "rel").symlink_to("b/../b")
    (tmp_path / "chain").symlink_to("abs/rel")
    for probe in ("abs/b", "a/rel", "chain", "chain/../b", "abs/missing/x/../y", "a/./b/"):
        path = tmp_path / probe
        assert trusted_realpath(path, lambda: []) == os.path.realpath(path), probe


def test_a_symlink_inside_a_writable_folder_is_refused_and_others_are_followed(tmp_path):
    writable = tmp_path / "ws"
    (writable / "real").mkdir(parents=True)
    (writable / "inner").symlink_to(writable / "real")
    (tmp_path / "outer").symlink_to(writable / "real")
    areas = lambda: [str(writable)]  # noqa: E731
    assert trusted_realpath(tmp_path / "outer", areas) == str(writable / "real")
    assert trusted_realpath(writable / "real", areas) == str(writable / "real")
    with pytest.raises(PlantedLink):
        trusted_realpath(writable / "inner", areas)
    with pytest.raises(PlantedLink):  # also reached through a trusted symlink
        (tmp_path / "via").symlink_to(writable)
        trusted_realpath(tmp_path / "via" / "inner" / "x", areas)


def test_the_writable_folders_are_asked_for_only_when_a_symlink_is_met(tmp_path):
    (tmp_path / "d").mkdir()

    def never():
        raise AssertionError("asked without a symlink on the way")

    assert trusted_realpath(tmp_path / "d", never) == str(tmp_path / "d")


def test_a_symlink_loop_is_an_error_not_a_hang(tmp_path):
    (tmp_path / "x").symlink_to("y")
    (tmp_path / "y").symlink_to("x")
    with pytest.raises(OSError, match="symbolic links"):
        trusted_realpath(tmp_path / "x", lambda: [])
