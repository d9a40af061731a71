"""``ldpfleet.run`` returns results.json as it reads back: the returned dict held the
scenario's ``source.bounds`` as a tuple where ``read_results`` has a list, so
``run(...) == read_results(out_dir)`` was False with every value equal (helper D)."""

import ldpfleet


def test_the_returned_results_equal_the_written_ones(tmp_path):
    out = tmp_path / "run"
    results = ldpfleet.run("quickstart", broker="memory", out_dir=out, seed=3)
    assert results == ldpfleet.read_results(out)
    assert isinstance(results["scenario"]["spec"]["source"]["bounds"], list)
