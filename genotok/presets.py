"""Model recipes: each returns the tokenizer and the :class:`~genotok.CellSpec` that give a
single-cell foundation model's own inputs.

``tok, spec = genotok.presets.geneformer(token_dictionary, gene_median_dictionary)`` then
``genotok.tokenize_anndata(path, tok, spec)`` (or ``pretokenize(inputs, tok, out,
cells=spec)``) gives Geneformer's ``input_ids``, token for token.

Geneformer (Theodoris et al. 2023; its ``TranscriptomeTokenizer``)
    genes by the ``ensembl_id`` var column (else ``gene_ids``, ``gene_id``, ``feature_id``,
    ``var_names``); duplicate ids summed first; each count divided by the cell's ``n_counts``
    (``obs``, else the row sum), times 10,000, divided by the gene's median over the training
    corpus (``gene_median_dictionary``); genes without a median or a token dropped (their
    counts stay in the total); genes by that value, descending, ties in column order;
    ``version=1``: the first 2,048; ``version=2``: the first 4,094 between ``<cls>`` and
    ``<eos>`` at the dictionary's ids (4,096 in all). When ``obs`` has a ``filter_pass``
    column, only the cells whose value is 1 are tokenized (``CellSpec.cell_filter``), as
    Geneformer's tokenizer skips the others.
scGPT (Cui et al. 2024)
    genes by ``var_names`` (scGPT's vocabularies are gene symbols) in the vocabulary (others
    removed first), normalised to 10,000, ``log1p``, then per-cell quantile bins of the
    positive values as the value channel (:class:`~genotok.singlecell.spec.QuantileBins`:
    scGPT's ``binning``; its random spreading over repeated edges drawn per cell from a
    seeded generator), tokens in column order after ``<cls>`` (value 0), as scGPT's
    ``tokenize_batch`` gives them; ``pad`` with ``<pad>`` as its ``pad_batch``.

Dictionary formats
------------------
``token_dictionary``: ``{gene id: token id}`` with the model's special tokens (Geneformer V1:
``"<pad>": 0, "<mask>": 1``; V2 adds ``"<cls>"``, ``"<eos>"``), as JSON, TOML or the model's
pickle (read safely), or a mapping. ``gene_median_dictionary``: ``{gene id: median}``, the same
formats. scGPT's ``vocab.json``: ``{gene symbol: token id}`` with ``"<pad>"``, ``"<cls>"``,
``"<eoc>"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .errors import GenotokError
from .genes import GeneSettings, GeneTokenizer, VocabularyError, read_mapping
from .params import N_THREADS, Flag, InstanceOf, Integral, Interval, Options, ParameterError, validated
from .singlecell.spec import CellSpec, Normalize, QuantileBins, RankByMedian

#: Geneformer's input size by version (with V2's <cls> and <eos>)
GENEFORMER_INPUT_SIZE = {1: 2048, 2: 4096}


def _mapping(obj) -> Mapping:
    return obj if isinstance(obj, Mapping) else read_mapping(obj)


def _where(source) -> str:
    return "vocabulary" if isinstance(source, Mapping) else os.fspath(source)


def _named(source, build):
    """``build()``; its error names the dictionary file ``source`` (a mapping: as it is), as
    an error of the file's own reading does: the content of a dictionary file is checked
    after it is read."""
    try:
        return build()
    except GenotokError as exc:
        if isinstance(source, Mapping) or str(exc).startswith(os.fspath(source)):
            raise
        raise type(exc)(f"{os.fspath(source)}: {exc}") from None


#: a dictionary: a path (JSON, TOML or pickle) or a mapping
_DICTIONARY = [InstanceOf(str, os.PathLike, Mapping)]


@validated({"token_dictionary": _DICTIONARY, "gene_median_dictionary": _DICTIONARY,
            "version": [Options(1, 2)], "id_column": [InstanceOf(str), None],
            "input_size": [Interval(Integral, 1, None), None],
            "n_threads": N_THREADS})
def geneformer(token_dictionary, gene_median_dictionary, *, version: int = 1,
               id_column: str | None = None, input_size: int | None = None,
               n_threads: int | None = None) -> tuple[GeneTokenizer, CellSpec]:
    """Geneformer's tokenizer and cell spec (see :mod:`genotok.presets`).

    Parameters
    ----------
    token_dictionary, gene_median_dictionary
        Geneformer's dictionaries (paths to JSON / TOML / pickle files, or mappings).
    version
        1 (30M models: 2,048 tokens, no framing) or 2 (95M/104M models: ``<cls>`` … ``<eos>``,
        4,096 in all; the dictionary must have both).
    id_column
        The ``var`` column of Ensembl ids (default: ``ensembl_id``, ``gene_ids``, …).
    input_size
        The model's input size (default 2,048 for V1, 4,096 for V2), framing included.

    Examples
    --------
    >>> vocab = {"<pad>": 0, "<mask>": 1, "<cls>": 2, "<eos>": 3, "ENSG1": 4}
    >>> tok, spec = geneformer(vocab, {"ENSG1": 2.0}, version=2)
    >>> spec.max_length, spec.add_cls, spec.add_eos, tok.cls_token_id
    (4094, True, True, 2)
    """
    vocab = _mapping(token_dictionary)
    medians = _mapping(gene_median_dictionary)
    tok = _named(token_dictionary, lambda: GeneTokenizer(vocab, settings=GeneSettings(
        id_column if id_column is not None else None, "count"), n_threads=n_threads))
    size = GENEFORMER_INPUT_SIZE[version] if input_size is None else int(input_size)
    framed = version == 2
    if framed and size < 3:
        raise ParameterError(f"geneformer: input_size={input_size} cannot hold <cls>, <eos> and "
                             "a gene (V2 frames each cell): give 3 or more")
    if framed and (tok.cls_token_id is None or tok.eos_token_id is None):
        raise VocabularyError(f"{_where(token_dictionary)}: Geneformer V2 frames each cell with "
                              "<cls> and <eos>: the token dictionary has no '<cls>' or '<eos>' "
                              "(a V1 dictionary?)")
    rank = _named(gene_median_dictionary, lambda: RankByMedian(dict(medians)))
    spec = CellSpec(encoding=(Normalize(1e4, total="n_counts"), rank),
                    order="value", max_length=size - 2 if framed else size,
                    add_cls=framed, add_eos=framed, cell_filter="filter_pass")
    return tok, spec


@validated({"vocab": _DICTIONARY, "n_bins": QuantileBins.CONSTRAINTS["n"], "append_cls": [Flag()],
            "id_column": [InstanceOf(str), None], "side": QuantileBins.CONSTRAINTS["side"],
            "seed": QuantileBins.CONSTRAINTS["seed"],
            "max_length": CellSpec.CONSTRAINTS["max_length"], "n_threads": N_THREADS})
def scgpt(vocab, n_bins: int = 51, *, append_cls: bool = True, id_column: str = "var_names",
          side: str = "both", seed: int = 0, max_length: int | None = None,
          n_threads: int | None = None) -> tuple[GeneTokenizer, CellSpec]:
    """scGPT's gene vocabulary and value binning (see :mod:`genotok.presets`).

    ``append_cls``: ``<cls>`` (value 0) first, as scGPT's ``tokenize_batch`` puts it by
    default; ``max_length`` then counts the genes only (scGPT's ``pad_batch`` samples the
    genes of a longer cell at random; here the first in column order are kept).

    Examples
    --------
    >>> tok, spec = scgpt({"<pad>": 2, "<cls>": 1, "CD3E": 0}, n_bins=11)
    >>> spec.encoding[-1].n, spec.values, spec.add_cls, tok.pad_token_id
    (11, True, True, 2)
    """
    v = _mapping(vocab)
    tok = _named(vocab, lambda: GeneTokenizer(
        v, special_tokens={r: t for r, t in {"pad": "<pad>", "cls": "<cls>", "eos": "<eoc>"}.items()
                           if t in v},
        settings=GeneSettings(id_column, "drop"), n_threads=n_threads))
    if append_cls and "<cls>" not in v:
        raise VocabularyError(f"{_where(vocab)}: scGPT puts <cls> before each cell: the "
                              "vocabulary has no '<cls>' (give it, or append_cls=False)")
    spec = CellSpec(encoding=(Normalize(1e4, log1p=True), QuantileBins(n_bins, side, seed)),
                    values=True, order="genomic", max_length=max_length,
                    add_cls=bool(append_cls))
    return tok, spec


__all__ = ["GENEFORMER_INPUT_SIZE", "geneformer", "scgpt"]
