"""The indexed corpus: many token records in shards, memory-mapped for training (``docs/formats.md``)."""

from .reader import (
    Corpus,
    CorpusWriter,
    check_expected,
    export_gtok_dir,
    export_parquet,
    import_gtok_dir,
    import_parquet,
    write_manifest,
)
from .remote import open_corpus

__all__ = ["Corpus", "CorpusWriter", "check_expected", "export_gtok_dir", "export_parquet",
           "import_gtok_dir", "import_parquet", "open_corpus", "write_manifest"]
