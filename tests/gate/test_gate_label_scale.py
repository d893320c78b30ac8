"""Human labels off the criterion's scale (issue 28, item 7): refused with one line naming the label, the item
and the scale, unless the criterion says its scale is open (``open_scale = true``)."""

from __future__ import annotations

import json

import pytest

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.gate import evaluate_gates, load_gate_config, read_labels

from support.ppi_runs import gate_file, gate_of, write_run

PPI_GATE = '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\n'
PASS_GATE = '[[gates]]\nkind = "corrected_pass_rate"\ncriterion = "quality"\nitem_min = 3\nmin = 0.1\n'


def _relabel(path, value: float) -> str:
    """Set the first label of a labels file to ``value``; return that item's id."""
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({"id": first["id"], "label": value})
    path.write_text("\n".join(lines) + "\n")
    return first["id"]


@pytest.mark.parametrize("gates", [PPI_GATE, PASS_GATE], ids=["ppi_ci_lower", "corrected_pass_rate"])
@pytest.mark.parametrize("value", [7.0, 0.0, 5.5])
def test_a_label_off_the_scale_is_refused_naming_label_item_and_scale(tmp_path, gates, value):
    write_run(tmp_path)
    item = _relabel(tmp_path / "labels.jsonl", value)
    with pytest.raises(InputError) as info:
        evaluate_gates(load_gate_config(gate_file(tmp_path, gates)))
    message = str(info.value)
    assert "\n" not in message
    assert f"{value:g}" in message and repr(item) in message and "1-5" in message and "open_scale" in message, message


def test_the_baseline_slice_is_checked_too(tmp_path):
    write_run(tmp_path, n_items=800, n_labels=60, seed=1, slice_seed=10, name="base-")
    write_run(tmp_path, n_items=800, n_labels=60, seed=1, slice_seed=11)
    item = _relabel(tmp_path / "base-labels.jsonl", 9.0)
    criteria = '[[criteria]]\nname = "quality"\nlabels = "labels.jsonl"\nbaseline_labels = "base-labels.jsonl"\n'
    gates = '[[gates]]\nkind = "ppi_regression"\ncriterion = "quality"\n'
    (tmp_path / "gate.toml").write_text(f'results = "results.jsonl"\nbaseline = "base-results.jsonl"\n{criteria}{gates}')
    with pytest.raises(InputError, match=rf"baseline run: .*base-labels.jsonl: item '{item}' has label 9, outside the scale 1-5"):
        evaluate_gates(load_gate_config(tmp_path / "gate.toml"))


def test_an_open_scale_takes_labels_off_it_and_says_the_interval_is_not_bounded(tmp_path):
    write_run(tmp_path)
    _relabel(tmp_path / "labels.jsonl", 7.0)
    config = gate_file(tmp_path, PPI_GATE, labels='labels = "labels.jsonl"\nopen_scale = true\n')
    g = gate_of(evaluate_gates(load_gate_config(config)), "ppi_ci_lower")
    assert g.outcome == "pass" and "1 label(s) outside the criterion's scale 1-5" in g.message and "within [1, 5]" not in g.message
    on_scale = {k: v for k, v in read_labels(tmp_path / "labels.jsonl").values.items() if v <= 5}
    assert len(on_scale) == 49
    with pytest.raises(ConfigError, match="open_scale"):
        load_gate_config(gate_file(tmp_path, PPI_GATE, labels='labels = "labels.jsonl"\nopen_scale = "perhaps"\n'))


def test_labels_on_the_scale_are_bounded_by_it_whether_or_not_it_is_open(tmp_path):
    write_run(tmp_path)
    closed = gate_of(evaluate_gates(load_gate_config(gate_file(tmp_path, PPI_GATE))), "ppi_ci_lower")
    opened = gate_of(evaluate_gates(load_gate_config(gate_file(tmp_path, PPI_GATE, labels='labels = "labels.jsonl"\nopen_scale = true\n'))), "ppi_ci_lower")
    assert closed.details["low"] == opened.details["low"] and closed.details["high"] == opened.details["high"]
    assert "[1, 5]" in closed.details["intervals"]["corrected"]["method"]


def test_cli_refuses_a_label_off_the_scale_with_exit_3_and_one_line(tmp_path, capsys):
    from judgesdk.cli.app import main

    write_run(tmp_path)
    item = _relabel(tmp_path / "labels.jsonl", 7.0)
    assert main(["gate", "--config", str(gate_file(tmp_path, PPI_GATE))]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"item '{item}' has label 7" in err and "1-5" in err, err
