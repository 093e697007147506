import nbformat
import pytest

from lmcompanion import runner
from lmcompanion.errors import ConfigError
from lmcompanion.runner import check_parameters, parameters_of, read_source, run_notebook

SOURCE = """# %% [markdown]
# # A notebook

# %% tags=["parameters"]
profile = "cpu"
device = "auto"
seed = 0
steps = None

# %%
print(profile, seed, steps)
"""


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "nb.py"
    path.write_text(SOURCE)
    return path


def test_parameters_are_read_from_the_tagged_cell(source):
    assert parameters_of(read_source(source)) == {"profile": "cpu", "device": "auto", "seed": 0, "steps": None}


def test_unknown_parameters_and_profiles_list_the_valid_ones(source):
    nb = read_source(source)
    with pytest.raises(
        ConfigError,
        match=r"unknown parameter 'sed' \(did you mean 'seed'\?\); valid parameters: "
        r"profile \(default 'cpu'\), device .*steps \(default None\)",
    ):
        check_parameters(nb, {"sed": 1}, source)
    with pytest.raises(ConfigError, match=r"unknown profile 'papr' \(did you mean 'paper'\?\); valid profiles"):
        check_parameters(nb, {"profile": "papr"}, source)


def test_execution_injects_parameters_and_is_byte_stable(source, tmp_path):
    a = run_notebook(source, tmp_path / "a.ipynb", profile="smoke", params={"seed": 3})
    b = run_notebook(source, tmp_path / "b.ipynb", profile="smoke", params={"seed": 3})
    nb, nb_b = nbformat.read(a, as_version=4), nbformat.read(b, as_version=4)
    # everything but the provenance (when and how long it ran) is byte-stable
    for x in (nb, nb_b):
        assert set(x.metadata.lmcompanion) >= {"source_sha256", "profile", "executed", "duration_s"}
        del x.metadata["lmcompanion"]
    assert nbformat.writes(nb) == nbformat.writes(nb_b)
    assert nb.cells[-1].outputs[0].text == "smoke 3 None\n"
    assert "jupytext" not in nb.metadata and nb.metadata.papermill == {"parameters": {"seed": 3, "profile": "smoke"}}
    assert [c.id for c in nb.cells] == [f"cell-{i}" for i in range(len(nb.cells))]
    assert all("execution" not in c.metadata and "papermill" not in c.metadata for c in nb.cells)
    tags = {c.source.splitlines()[0]: c.metadata.get("tags", []) for c in nb.cells if c.cell_type == "code"}
    assert tags == {
        'profile = "cpu"': ["parameters", "hide-cell"],
        "# Parameters": ["injected-parameters", "hide-cell"],
        "print(profile, seed, steps)": [],
    }  # it shows its output: its code stays in view


def test_plumbing_is_hidden_one_click_away_and_the_rest_is_not():
    from lmcompanion.runner import tag_plumbing

    nb = nbformat.v4.new_notebook()
    shown = nbformat.v4.new_output("stream", text="x\n")
    nb.cells = [
        nbformat.v4.new_markdown_cell("# t"),
        nbformat.v4.new_code_cell("a = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("# Parameters", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("S = nb.setup(profile=profile)\nprint(S)", outputs=[shown]),
        nbformat.v4.new_code_cell("for t in ts:\n    pass", metadata={"tags": ["nbval-ignore-output"]}),
        nbformat.v4.new_code_cell("plots.loss_curves(runs)", outputs=[shown]),
        nbformat.v4.new_code_cell("nb.setupx(1)", outputs=[shown]),
    ]
    tag_plumbing(tag_plumbing(nb))  # twice: a tag is added once
    assert [c.metadata.get("tags", []) for c in nb.cells[1:]] == [
        ["parameters", "hide-cell"],
        ["injected-parameters", "hide-cell"],
        ["hide-input"],
        ["nbval-ignore-output", "hide-input"],
        [],
        [],
    ]
    assert "tags" not in nb.cells[0].metadata
    # the three toggles at the top of a page say what they fold (myst-nb's per-cell prompts), the others do not
    prompts = [c.metadata.get("mystnb", {}).get("code_prompt_show") for c in nb.cells[1:]]
    assert prompts[:3] == [
        p[0] for p in (runner.PROMPTS["parameters"], runner.PROMPTS["injected-parameters"], runner.PROMPTS["setup"])
    ]
    assert all(p is None for p in prompts[3:]) and len(set(prompts[:3])) == 3


def test_a_failing_notebook_names_the_cell_and_keeps_the_partial_output(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(SOURCE + "\n# %%\nraise ValueError('boom')\n")
    kept = tmp_path / "bad.failed.ipynb"
    with pytest.raises(Exception, match=r"(?s)failed in cell \d+: ValueError: boom.*partly executed notebook") as got:
        run_notebook(path, tmp_path / "bad.ipynb", profile="smoke")
    assert kept.exists() and not (tmp_path / "bad.ipynb").exists()
    # the message says where it is and what the next run does to it; a run that succeeds removes it
    assert (
        f"kept in {kept} (the next run of this notebook replaces it, and removes it when the notebook succeeds)"
        in str(got.value)
    )
    path.write_text(SOURCE)
    run_notebook(path, tmp_path / "bad.ipynb", profile="smoke")
    assert (tmp_path / "bad.ipynb").exists() and not kept.exists()


def test_adjacent_stream_outputs_are_merged():
    from lmcompanion.runner import _merge_streams

    outs = [
        {"output_type": "stream", "name": "stdout", "text": "a\n"},
        {"output_type": "stream", "name": "stdout", "text": "b\n"},
        {"output_type": "stream", "name": "stderr", "text": "c\n"},
        {"output_type": "display_data", "data": {}},
        {"output_type": "stream", "name": "stdout", "text": "d\n"},
    ]
    merged = _merge_streams(outs)
    assert [o.get("text") for o in merged] == ["a\nb\n", "c\n", None, "d\n"]


def test_a_gpu_profile_without_a_gpu_stops_unless_the_cpu_is_asked_for(monkeypatch):
    import torch

    from lmcompanion import nb

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for profile in ("gpu", "paper"):
        with pytest.raises(ConfigError, match="device='cpu' to run it on the CPU anyway"):
            nb.setup(profile=profile)
        assert nb.setup(profile=profile, device="cpu").device == "cpu"  # asked for: allowed
    assert nb.setup(profile="cpu").device == "cpu"


def test_parameters_of_the_declared_type_are_accepted(source):
    nb = read_source(source)
    # an int where the default is None, None where it is an int-or-None, an int where a float is expected
    check_parameters(nb, {"steps": 5, "seed": 2, "profile": "smoke", "device": "cpu"}, source)
    check_parameters(nb, {"steps": None}, source)
    src = source.with_name("typed.py")
    src.write_text('# %% tags=["parameters"]\nlr = 0.1\nflags = [1]\non = False\n\n# %%\nprint(lr)\n')
    check_parameters(read_source(src), {"lr": 1, "flags": [], "on": True}, src)
    for bad in ({"lr": "0.1"}, {"flags": {}}, {"on": 1}, {"lr": True}):
        with pytest.raises(ConfigError, match=f"parameter '{next(iter(bad))}' is given"):
            check_parameters(read_source(src), bad, src)


def test_the_kernel_s_own_noise_is_not_printed_and_the_rest_is(source, tmp_path, capfd):
    """ipykernel's TCP warning and the KeyboardInterrupt it logs when shut down are dropped; anything else the kernel
    process prints reaches stderr."""
    from lmcompanion.runner import _replay_kernel_log

    run_notebook(source, tmp_path / "a.ipynb", profile="smoke")
    err = capfd.readouterr().err
    assert "TCP without encryption" not in err and "KeyboardInterrupt" not in err
    log = tmp_path / "kernel.log"
    log.write_bytes(
        b"[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All communication ...\n"
        b"KeyboardInterrupt caught in kernel\n[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel.\n"
        b"Fatal Python error: Segmentation fault\n"
    )
    with open(log, "rb") as f:
        _replay_kernel_log(f)
    assert capfd.readouterr().err == "Fatal Python error: Segmentation fault\n"


def test_without_the_book_extra_run_notebook_says_what_to_install(source, tmp_path, monkeypatch):
    import sys

    from lmcompanion.errors import LMCError

    monkeypatch.setitem(sys.modules, "papermill", None)  # as if not installed
    with pytest.raises(LMCError, match=r"needs papermill, which is in the book and test extras: pip install"):
        run_notebook(source, tmp_path / "a.ipynb")
