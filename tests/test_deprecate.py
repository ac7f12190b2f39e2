"""The deprecation plumbing (genotok/_deprecate.py): old spellings work one release, and warn."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pytest

from genotok._deprecate import (
    REMOVED_IN,
    SINCE,
    deprecated_value,
    is_path,
    renamed_function,
    renamed_kwargs,
    renamed_property,
    reordered_args,
)


# --------------------------------------------------------------------------- renamed_kwargs
@renamed_kwargs(max_tokens="max_length", quiet=("progress", lambda q: not q))
def run(x, *, max_length=None, progress=True):
    """Echo the arguments."""
    return x, max_length, progress


def test_new_keywords_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(1, max_length=3, progress=False) == (1, 3, False)
        assert run(1) == (1, None, True)


def test_old_keyword_warns_and_works():
    with pytest.warns(DeprecationWarning, match=r"max_tokens= is deprecated .* use max_length="):
        assert run(1, max_tokens=3) == (1, 3, True)


def test_warning_names_the_releases_and_the_caller():
    with pytest.warns(DeprecationWarning) as record:
        run(1, max_tokens=3)
    message = str(record[0].message)
    assert f"since genotok {SINCE}" in message and f"removed in {REMOVED_IN}" in message
    assert message.startswith("run():")
    assert record[0].filename == __file__  # points at the user's line, not at the wrapper


@pytest.mark.parametrize("quiet, progress", [(True, False), (False, True)])
def test_converted_keyword(quiet, progress):
    with pytest.warns(DeprecationWarning, match=rf"quiet={quiet} is progress={progress}"):
        assert run(1, quiet=quiet) == (1, None, progress)


def test_old_and_new_together_is_a_type_error():
    with pytest.raises(TypeError, match=r"both max_tokens= \(deprecated\) and max_length="):
        run(1, max_tokens=3, max_length=4)
    with pytest.raises(TypeError, match="both quiet="):
        run(1, quiet=True, progress=True)


def test_two_old_keywords_warn_twice():
    with pytest.warns(DeprecationWarning) as record:
        assert run(1, max_tokens=2, quiet=True) == (1, 2, False)
    assert len(record) == 2


def test_unknown_keyword_still_a_type_error():
    with pytest.raises(TypeError):
        run(1, max_tokenz=3)


def test_signature_shows_only_the_new_names():
    params = inspect.signature(run).parameters
    assert list(params) == ["x", "max_length", "progress"]
    assert run.__doc__ == "Echo the arguments." and run.__name__ == "run"
    assert run.__deprecated_kwargs__ == {"max_tokens": "max_length", "quiet": "progress"}


def test_methods_and_kwargs_functions():
    class Thing:
        @renamed_kwargs(directory="out")
        def save(self, out):
            return out

    with pytest.warns(DeprecationWarning, match=r"Thing.save\(\): directory="):
        assert Thing().save(directory="d") == "d"

    @renamed_kwargs(output="out")
    def f(**kwargs):
        return kwargs

    with pytest.warns(DeprecationWarning):
        assert f(output=1) == {"out": 1}


def test_bad_declarations_are_refused():
    with pytest.raises(ValueError, match="still has a parameter 'old'"):
        @renamed_kwargs(old="new")
        def f(old=None, new=None):
            pass
    with pytest.raises(ValueError, match="no parameter 'new'"):
        @renamed_kwargs(old="new")
        def g(other=None):
            pass
    with pytest.raises(ValueError, match="to itself"):
        renamed_kwargs(a="a")


# --------------------------------------------------------------------------- reordered_args
@reordered_args(("path", "ids"))
def write(ids, out, width=None):
    return list(ids), out, width


def test_new_order_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write([1], "a.gtok") == ([1], "a.gtok", None)
        assert write(ids=[1], out="a.gtok", width=2) == ([1], "a.gtok", 2)
        assert write([1], out=Path("a")) == ([1], Path("a"), None)


@pytest.mark.parametrize("path", ["a.gtok", Path("a.gtok"), b"a.gtok"])
def test_old_order_warns_and_is_swapped(path):
    with pytest.warns(DeprecationWarning, match=r"write\(path, ids\) is deprecated .* "
                                                r"use write\(ids, out\)"):
        assert write(path, [1, 2], 4) == ([1, 2], path, 4)


def test_ambiguous_order_is_read_as_the_new_one():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write("ab", "c.gtok") == (["a", "b"], "c.gtok", None)


def test_reordered_method_and_custom_test():
    class W:
        @reordered_args(("directory", "shards"),
                        is_old=lambda a, b: is_path(a) and isinstance(b, list))
        def manifest(self, shards, out):
            return shards, out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert W().manifest(["s1"], "d") == (["s1"], "d")
    with pytest.warns(DeprecationWarning, match=r"W.manifest\(directory, shards\)"):
        assert W().manifest("d", ["s1"]) == (["s1"], "d")


def test_reordered_needs_two_positionals():
    with pytest.raises(ValueError, match="fewer than two"):
        @reordered_args(("a", "b"))
        def f(a, *, b):
            pass


def test_is_path():
    assert is_path("x") and is_path(Path("x")) and is_path(b"x")
    assert not is_path([1]) and not is_path(None) and not is_path(3)


# --------------------------------------------------------------------------- renamed_function
def write_universe(regions, out):
    """Write a universe.

    Examples
    --------
    >>> write_universe([], "u.bed")
    'u.bed'
    """
    return out


def test_renamed_function_warns_and_calls_the_new_one():
    old = renamed_function(write_universe, "save_universe")
    with pytest.deprecated_call(match=r"save_universe\(\) is deprecated .* use write_universe\(\)"):
        assert old([], out="u.bed") == "u.bed"
    assert old.__name__ == "save_universe" and old.__wrapped__ is write_universe
    assert "deprecated" in old.__deprecated__
    assert old.__doc__.startswith("Deprecated alias of :func:`write_universe`")
    assert ">>>" in old.__doc__  # the docs test still finds an example
    assert inspect.signature(old) == inspect.signature(write_universe)


def test_renamed_method_qualname():
    class K:
        def new(self):
            return 1

        old = renamed_function(new, "old")

    assert K.old.__qualname__.endswith("K.old")
    with pytest.deprecated_call():
        assert K().old() == 1


# --------------------------------------------------------------------------- renamed_property
def test_renamed_property():
    class Corpus:
        special_token_ids = property(lambda self: {"unk": 4})
        special_tokens = renamed_property("special_token_ids", "special_tokens")

    with pytest.deprecated_call(match="special_tokens is deprecated .* use special_token_ids") \
            as record:
        assert Corpus().special_tokens == {"unk": 4}
    assert record[0].filename == __file__
    assert Corpus.special_tokens.fget.__deprecated__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Corpus().special_token_ids == {"unk": 4}


# --------------------------------------------------------------------------- deprecated_value
def test_deprecated_value():
    def tokenize(output="ragged"):
        if output == "list":
            deprecated_value("tokenize", "output", output, "tokenize(...).to_list()")
        return output

    with pytest.deprecated_call(match=r"tokenize\(output='list'\) is deprecated .* "
                                      r"use tokenize\(\.\.\.\)\.to_list\(\)") as record:
        tokenize("list")
    assert record[0].filename == __file__


# --------------------------------------------------------------------------- stacked, as phase B uses them
@reordered_args(("path", "ids"))
@renamed_kwargs(path="out")
def write_gtok(ids, out, width=None, *, atomic=True):
    return list(ids), out, width, atomic


def test_reorder_and_rename_stacked():
    assert list(inspect.signature(write_gtok).parameters) == ["ids", "out", "width", "atomic"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write_gtok([1], "a.gtok", 2) == ([1], "a.gtok", 2, True)
    with pytest.deprecated_call(match=r"write_gtok\(path, ids\)"):
        assert write_gtok("a.gtok", [1], atomic=False) == ([1], "a.gtok", None, False)
    with pytest.deprecated_call(match="path= is deprecated"):
        assert write_gtok(path="a.gtok", ids=[1]) == ([1], "a.gtok", None, True)
    with pytest.raises(TypeError, match="both path="):
        write_gtok([1], path="a.gtok", out="b.gtok")
