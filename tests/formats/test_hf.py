"""Hugging Face: an Arrow-backed Dataset over the corpus's tokens; datasets.map and Trainer."""

from __future__ import annotations

import numpy as np
import pytest

datasets = pytest.importorskip("datasets", reason="pip install datasets")
pa = pytest.importorskip("pyarrow")

from genotok import Corpus, CorpusWriter
from genotok.formats.corpus import write_manifest

VOCAB = 40


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    d = tmp_path_factory.mktemp("c")
    rng = np.random.default_rng(0)
    paths = []
    for k in range(3):
        p = d / f"s{k}.gtokc"
        with CorpusWriter(p, vocab_size=VOCAB, fingerprint="fp", values_dtype="float32",
                          metadata_columns=["cell_type"]) as w:
            for i in range(17):
                n = int(rng.integers(0, 12))
                w.append(rng.integers(0, 30, n), name=f"s{k}-{i}", values=rng.random(n),
                         meta={"cell_type": ["T", "B"][i % 2]})
        paths.append(p)
    write_manifest(paths, d)
    return Corpus.open(d)


def test_rows_columns_and_no_copy_of_the_tokens(sharded):
    ds = sharded.to_hf_dataset()
    assert ds.num_rows == len(sharded) == 51
    assert ds.column_names == ["input_ids", "length", "values", "name", "cell_type"]
    for i in (0, 16, 17, 50):
        row = ds[i]
        assert row["input_ids"] == sharded[i].tolist() and row["length"] == len(sharded[i])
        np.testing.assert_allclose(row["values"], sharded.values(i))
        assert (row["name"], row["cell_type"]) == (sharded.names[i], sharded.meta["cell_type"][i])
    col = ds.data.column("input_ids")
    assert col.num_chunks == 3  # one per shard
    for k, chunk in enumerate(col.chunks):  # the Arrow buffer is the memory-mapped section
        tokens = sharded[sharded_start(sharded, k):sharded_start(sharded, k + 1)].data
        assert chunk.values.buffers()[1].address == tokens.__array_interface__["data"][0]
    assert len(datasets.Dataset.from_dict({"a": [1]})) == 1


def sharded_start(corpus, k):
    return sum(e["n_records"] for e in corpus.manifest["shards"][:k])


def test_map_and_numpy_format(sharded):
    ds = sharded.to_hf_dataset(values=False, names=False, meta=False).with_format("numpy")
    doubled = ds.map(lambda b: {"twice": [x * 2 for x in b["input_ids"]]}, batched=True,
                     batch_size=10)
    for i in range(len(sharded)):
        np.testing.assert_array_equal(doubled[i]["twice"], sharded[i].astype(np.int64) * 2)
    stream = sharded.to_hf_dataset(streaming=True)
    assert stream.num_shards == 3
    assert [r["input_ids"] for r in stream] == [sharded[i].tolist() for i in range(51)]


def test_hf_trainer_trains_a_tiny_bert(sharded, tmp_path):
    """MLMCollator is the Trainer's data_collator as it is (issue 34: it raised IndexError on
    the Trainer's row dicts), on to_hf_dataset() as it is: empty rows and extra columns too."""
    transformers = pytest.importorskip("transformers", reason="pip install transformers")
    torch = pytest.importorskip("torch")
    from genotok.torch_data import Collator, MLMCollator

    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=32, pad_token_id=31)
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(config)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=8, use_cpu=True,
        report_to=[], save_strategy="no", logging_strategy="no", dataloader_num_workers=0,
        disable_tqdm=True, learning_rate=1e-2)
    collate = MLMCollator(Collator(pad_token_id=31, seed=1), n_regions=30, mask_token_id=32,
                          mask_prob=0.5)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=sharded.to_hf_dataset(),
                                   data_collator=collate)
    out = trainer.train()
    assert trainer.state.global_step == 4 and np.isfinite(out.training_loss)
