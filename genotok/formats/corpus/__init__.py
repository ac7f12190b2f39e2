"""The indexed corpus: many token records in shards, memory-mapped for training (``docs/formats.md``).

Modules: :mod:`.writer` (``CorpusWriter``), :mod:`.reader` (``Corpus``), :mod:`.shard` (one
file opened and checked), :mod:`.verify`, :mod:`.manifest` (sharded directories),
:mod:`.remote` (object stores, through a local cache) and :mod:`.layout` (the byte layout);
Parquet and gtok-directory interop live in :mod:`genotok.formats.interop`.
"""

from .layout import MANIFEST
from .manifest import write_manifest
from .reader import Corpus, check_expected
from .remote import RemoteCorpus, open_corpus
from .writer import CorpusWriter, json_scalars

__all__ = ["MANIFEST", "Corpus", "CorpusWriter", "RemoteCorpus", "check_expected",
           "json_scalars", "open_corpus", "write_manifest"]
