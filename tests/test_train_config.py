"""Training recipes: every file in configs/ loads; bad keys, types and YAML are clear errors naming the
file and the key path; command-line overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from syntaxlm.models import MODEL_NAMES, PARSER_NAMES, ConfigError
from syntaxlm.train import RunConfig, load_config, run_config
from syntaxlm.train.config import apply_overrides, recorded_config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECIPES = sorted(CONFIGS.glob("*.yaml"))

GOOD = """\
model:
  model: lm
  d_model: 32
  n_layers: 1
  n_heads: 2
  d_ff: 64
data:
  synthetic: {sentences: 100, seed: 1}
train:
  lr: 3e-4
  max_steps: 1e3
  betas: [0.9, 0.95]
"""


def write(tmp_path: Path, text: str, name: str = "recipe.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the recipes ------------------------------------------------------------------------------------


# The transformer family is trained on PTB and BLLIP in its papers; the others on PTB or UD EWT; "small"
# recipes train the TG and Qian et al. comparisons on the real-English corpus (docs/real-english.md).
SCALES = ("tiny", "ptb", "bllip", "ewt", "small")


def test_every_model_has_a_tiny_recipe_and_one_on_real_data():
    names = {path.stem for path in RECIPES}
    for model in MODEL_NAMES + PARSER_NAMES:
        assert f"{model}-tiny" in names, model
        assert any(f"{model}-{scale}" in names for scale in SCALES[1:]), model
    for name in names:
        model, scale = name.rsplit("-", 1)
        assert model in MODEL_NAMES + PARSER_NAMES and scale in SCALES, name


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_recipe_loads_and_validates(path):
    config = load_config(path)
    assert isinstance(config, RunConfig)
    name, scale = path.stem.rsplit("-", 1)
    assert config.model.model == name
    if scale == "tiny":
        assert config.data.synthetic is not None and config.model.n_layers <= 6
        assert config.train.max_steps <= 1000
    else:
        assert config.data.synthetic is None and config.data.train.startswith("data/")
    assert load_config(path, [f"train.seed={config.train.seed + 1}"]).train.seed == config.train.seed + 1


def test_paper_sizes():
    tg = load_config(CONFIGS / "tg-ptb.yaml")
    assert (tg.model.n_layers, tg.model.d_model, tg.model.n_heads, tg.model.d_ff) == (16, 256, 8, 1024)
    assert (tg.model.segment_length, tg.model.memory_length) == (256, 256)
    assert tg.train.lr == 1.5e-4 and tg.train.warmup_steps == 8000 and tg.train.max_steps == 100_000
    assert tg.train.clip_norm == 3.0 and tg.train.batch_size == 64 and tg.train.schedule == "cosine"
    big = load_config(CONFIGS / "tg-bllip.yaml")
    assert (big.model.n_layers, big.model.d_model, big.model.d_ff) == (16, 1024, 4096)
    assert big.data.vocab.kind == "subword" and big.data.vocab.vocab_size == 32000
    plm = load_config(CONFIGS / "plm-bllip.yaml")
    assert (plm.model.n_layers, plm.model.d_model, plm.model.n_heads) == (12, 768, 12)
    assert plm.train.lr == 1e-5 and plm.train.batch_size == 5 and plm.train.patience == 2
    assert load_config(CONFIGS / "sclm-next-ptb.yaml").model.scaffold_weight == 0.5


# --- values -----------------------------------------------------------------------------------------


def test_yaml_numbers_with_exponents_are_numbers(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert config.train.lr == 3e-4
    assert config.train.max_steps == 1000 and isinstance(config.train.max_steps, int)
    assert config.train.betas == (0.9, 0.95)
    assert config.data.synthetic.sentences == 100 and config.data.vocab.kind == "word"
    assert config.model.d_model == 32


def test_round_trip_through_a_dict(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert run_config(config.to_dict()) == config


def test_a_run_recorded_before_fields_were_added_or_removed_compares_equal_to_its_recipe():
    """Runs record their whole config; an LSTM run made when every family had ``n_heads``/``d_ff``
    and before ``train.on_nonfinite`` existed is the same recipe, so it resumes and is reused."""
    config = load_config(CONFIGS / "lstm-tiny.yaml")
    recorded = config.to_dict()
    recorded["model"].update(n_heads=4, d_ff=256)
    del recorded["train"]["on_nonfinite"]
    assert recorded != config.to_dict()
    assert recorded_config(recorded) == config.to_dict()
    other = config.to_dict()
    other["model"]["hidden_size"] += 1
    assert recorded_config(other) != config.to_dict()


@pytest.mark.parametrize(
    "edit, message",
    [
        (("  lr: 3e-4", "  lr: fast"), "train.lr must be a number, got 'fast'"),
        (("  lr: 3e-4", "  lr: true"), "train.lr must be a number, got True"),
        (("  max_steps: 1e3", "  max_steps: 10.5"), "train.max_steps must be an integer, got 10.5"),
        (("  max_steps: 1e3", "  max_steps: 0"), "train.max_steps must be at least 1, got 0"),
        (("  lr: 3e-4", "  lr: 3e-4\n  learning_rate: 1"), "unknown key train.learning_rate"),
        (("  betas: [0.9, 0.95]", "  betas: [0.9]"), "train.betas must be a list of 2 values, got [0.9]"),
        (("  betas: [0.9, 0.95]", "  betas: [0.9, 1.5]"), "train.betas must be two numbers in [0, 1)"),
        (
            ("  lr: 3e-4", "  schedule: linear"),
            "train.schedule must be one of 'cosine', 'inverse-sqrt', 'constant'",
        ),
        (("  lr: 3e-4", "  precision: fp16"), "train.precision must be one of 'fp32', 'bf16', got 'fp16'"),
        (("  d_model: 32", "  d_model: big"), "model.d_model must be an integer, got 'big'"),
        (("  n_heads: 2", "  n_heads: 3"), "model.d_model (32) must be a multiple of model.n_heads (3)"),
        (("  d_ff: 64", "  d_ff: 64\n  width: 3"), "unknown key model.width"),
        (("  model: lm", "  model: gpt5"), "unknown model 'gpt5'"),
        (("{sentences: 100, seed: 1}", "{sentences: many}"), "data.synthetic.sentences must be an integer"),
        (("  synthetic: {sentences: 100, seed: 1}", "  vocab: {kind: word}"), "data needs train and valid"),
        (("seed: 1}", "seed: 1}\n  train: a.trees"), "either data.synthetic or data.train"),
        (("seed: 1}", "seed: 1}\n  vocab: {kind: char}"), "data.vocab.kind must be one of 'word', 'subword'"),
        (
            ("seed: 1}", "seed: 1}\n  vocab_path: v\n  vocab: {kind: word}"),
            "give data.vocab (build one) or data.vocab_path (use one), not both",
        ),
        (("train:", "training:"), "unknown section(s) training"),
        (("data:\n  synthetic: {sentences: 100, seed: 1}\n", ""), "the data section is missing"),
        (
            ("train:\n  lr: 3e-4\n  max_steps: 1e3\n  betas: [0.9, 0.95]\n", "train: 3\n"),
            "train must be a mapping, got 3",
        ),
    ],
)
def test_bad_values_name_the_file_and_the_key(tmp_path, edit, message):
    old, new = edit
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    text = str(error.value)
    assert text.startswith(str(path)), text
    assert message in text, text


def test_bad_yaml_gives_line_and_column(tmp_path):
    path = write(tmp_path, GOOD.replace("  n_heads: 2", "  n_heads: [2"))
    with pytest.raises(ConfigError, match=rf"^{path}:\d+:\d+: invalid YAML"):
        load_config(path)
    duplicated = write(tmp_path, GOOD.replace("  lr: 3e-4", "  lr: 3e-4\n  lr: 1e-3"), "dup.yaml")
    with pytest.raises(ConfigError, match=rf"^{duplicated}:11:3: duplicate key 'lr'"):
        load_config(duplicated)
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(write(tmp_path, "- a\n- b\n", "list.yaml"))
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.yaml")


# --- overrides --------------------------------------------------------------------------------------


def test_overrides_set_nested_keys_and_are_checked(tmp_path):
    path = write(tmp_path, GOOD)
    config = load_config(
        path, ["train.lr=1e-3", "model.n_layers=3", "data.synthetic.seed=7", "train.betas=[0.8, 0.9]"]
    )
    assert config.train.lr == 1e-3 and config.model.n_layers == 3 and config.data.synthetic.seed == 7
    assert config.train.betas == (0.8, 0.9)
    assert load_config(path, ["train.patience=null"]).train.patience is None
    with pytest.raises(ConfigError, match=r"\(with train.lr=fast\): train.lr must be a number, got 'fast'"):
        load_config(path, ["train.lr=fast"])
    with pytest.raises(ConfigError, match="unknown key train.lr_max"):
        load_config(path, ["train.lr_max=1"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        load_config(path, ["train.lr"])
    with pytest.raises(ConfigError, match="train.lr is not a section"):
        load_config(path, ["train.lr.peak=1"])


def test_setting_data_paths_replaces_the_synthetic_treebank(tmp_path):
    config = load_config(write(tmp_path, GOOD), ["data.train=a.trees", "data.valid=b.trees"])
    assert config.data.synthetic is None and (config.data.train, config.data.valid) == ("a.trees", "b.trees")
    document = {"data": {"synthetic": {"sentences": 5}}}
    apply_overrides(document, ["data.train=x"])
    assert document == {"data": {"train": "x"}}


def test_treebank_paths_are_the_given_files_or_the_synthetic_ones_in_the_run(tmp_path):
    synthetic = load_config(write(tmp_path, GOOD)).data
    assert synthetic.treebank_paths(tmp_path / "run") == {
        "train": tmp_path / "run" / "data" / "train.trees",
        "valid": tmp_path / "run" / "data" / "dev.trees",
        "test": tmp_path / "run" / "data" / "test.trees",
    }
    given = load_config(write(tmp_path, GOOD), ["data.train=a.trees", "data.valid=b.trees"]).data
    assert given.treebank_paths(tmp_path / "run") == {"train": Path("a.trees"), "valid": Path("b.trees")}


# --- recipes that once crashed or wrote files before failing ----------------------------------------


def _train_refused(tmp_path: Path, recipe: Path, *options: str) -> str:
    """``syntaxlm train`` on ``recipe``: it must fail with a typed error before creating the run folder."""
    from typer.testing import CliRunner

    from syntaxlm.cli import app

    out = tmp_path / "run"
    done = CliRunner().invoke(app, ["train", str(recipe), "--out", str(out), "--no-progress", *options])
    assert done.exit_code != 0 and isinstance(done.exception, ConfigError), done.output
    assert not out.exists(), sorted(path.name for path in out.iterdir())
    return str(done.exception)


def test_yaml_nested_20000_deep_is_refused_naming_the_key_in_a_file_or_an_override(tmp_path):
    deep = "[" * 20_000 + "]" * 20_000
    recipe = write(tmp_path, GOOD.replace("betas: [0.9, 0.95]", f"betas: {deep}"))
    message = _train_refused(tmp_path, recipe)
    assert message.startswith(f"{recipe}:12:40: train.betas[0][0]..."), message
    assert "collections nested more than 32 deep" in message, message
    message = _train_refused(tmp_path, write(tmp_path, GOOD, "good.yaml"), "--set", f"train.betas={deep}")
    assert "override train.betas:1:" in message and "collections nested more than 32 deep" in message, message
    # An override key of 20,000 parts builds the nesting itself; YAML aliases repeat values.
    long_key = "model." + "x." * 20_000 + "y=1"
    message = _train_refused(tmp_path, recipe.with_name("good.yaml"), "--set", long_key)
    assert "model.x.x.x..." in message and "collections nested more than 32 deep" in message, message
    aliases = "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 6)}]\n" for i in range(1, 12)
    )
    message = _train_refused(tmp_path, write(tmp_path, aliases, "aliases.yaml"))
    assert "more than 100,000 values in all (counting every use of a YAML alias)" in message, message


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.seed=" + "1" * 50, "train.seed must be an integer of 64 bits (at most 2**63 - 1), got 1111"),
        ("train.seed=-1", "train.seed must be an integer from 0 to 2**63 - 1 (9223372036854775807), got -1"),
        ("data.synthetic.seed=" + "9" * 50, "data.synthetic.seed must be an integer of 64 bits"),
        ("data.synthetic.sentences=" + "9" * 5000, "data.synthetic.sentences:1:1: an integer of 5000 digits"),
        ("model.d_model=" + "1" * 30, "model.d_model must be an integer of 64 bits"),
        ("train.lr=1e400", "train.lr must be a finite number, got inf"),
        ("train.weight_decay=.nan", "train.weight_decay must be a finite number, got nan"),
    ],
)
def test_out_of_range_numbers_are_refused_before_the_run_folder_is_made(tmp_path, override, message):
    recipe = write(tmp_path, GOOD)
    assert message in _train_refused(tmp_path, recipe, "--set", override)
