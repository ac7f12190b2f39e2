"""Token storage: gtars' ``.gtok`` single lists, the indexed corpus, and interop (Parquet, gtok
directories, Hugging Face datasets).

Importing the package registers the stores' reader with the corpus reader (:mod:`.stores`
imports :mod:`.corpus`, never the reverse), so ``Corpus.open`` opens any store's output
however it was reached, as :mod:`.corpus` registers its remote opener."""

from . import stores  # noqa: F401,E402 - registers _open_store_output with corpus.manifest
