"""What `astra` prints for people: tables that keep ids whole at 80 columns and brackets as written."""

from __future__ import annotations

import json

from astralyx.cli.output import print_table


def test_ids_stay_whole_and_brackets_stay_at_80_columns(capsys):
    rows = [{"name": "multilingual-e5-small-int8-for-the-team", "kind": "embedding",
             "status": "down: needs the Python module llama_cpp: pip install 'astralyx[llama]' (it compiles for minutes)"}]
    print_table(rows, ["name", "kind", "status"])
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "multilingual-e5-small-int8-for-the-team" in out.splitlines()[1]
    assert "'astralyx[llama]'" in out


def test_undeploy_and_verify_take_json(astra, client):
    spec = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": "http://127.0.0.1:9/v1"}}
    assert client.put("/v1/eos/deployments/gone", json={"spec": spec}).status_code == 200
    assert json.loads(astra("eos", "undeploy", "gone", "--yes", "--json").output) == {"deleted": "gone"}


def test_receipts_verify_json_says_why(astra, tmp_path):
    bad = tmp_path / "receipt.json"
    bad.write_text("not json")
    result = astra("eos", "receipts", "verify", str(bad), "--json", ok=False)
    assert result.exit_code == 1 and json.loads(result.output)["valid"] is False
