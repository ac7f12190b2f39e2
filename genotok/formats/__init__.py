"""Token storage: gtars' ``.gtok`` single lists, the indexed corpus, and interop (Parquet, gtok
directories, Hugging Face datasets)."""
