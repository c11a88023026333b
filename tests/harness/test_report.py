"""`experiment=all profile=smoke` regenerates every experiment and writes the report with every claim."""

import csv
from html.parser import HTMLParser

from conftest import CONF_DIR, ROOT
from omegaconf import OmegaConf

from dpstream.harness.config import load_experiment
from dpstream.harness.runner import run
from dpstream.plots.names import relabel


def leaves(name: str) -> list[str]:
    spec = load_experiment(CONF_DIR, name, "smoke")
    return [leaf for part in spec["parts"] for leaf in leaves(part)] if spec.get("parts") else [name]


def test_all_covers_every_experiment_file():
    files = {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")}
    aggregates = {n for n in files if "parts" in OmegaConf.load(CONF_DIR / "experiment" / f"{n}.yaml")}
    assert set(leaves("all")) == files - aggregates


def test_smoke_report_lists_every_experiment_and_claim(compose_cfg, smoke_results):
    cfg = compose_cfg(["experiment=all", "profile=smoke", f"results_dir={smoke_results}", "reproduction=true",
                       f"data_dir={ROOT / 'data'}", "n_jobs=2"])
    frames = run(cfg, CONF_DIR)
    report = (smoke_results / "report.md").read_text()
    html = (smoke_results / "report.html").read_text()
    assert len(frames) == len(leaves("all"))
    for exp_id in leaves("all"):
        assert f"## {exp_id}:" in report and f"{exp_id}:" in html
    for claims in (smoke_results / "tables").glob("*.claims.csv"):
        first_claim = relabel(next(csv.reader(claims.read_text().splitlines()[1:]))[0])  # the papers' names
        assert first_claim[:30] in report
    assert "Verdicts:" in report and "| profile | smoke |" in report


def test_continual_table_shows_end_and_release_time_metrics_per_mechanism_and_x():
    import pandas as pd

    from dpstream.harness.report import continual_table

    df = pd.DataFrame({"mechanism.name": ["a", "a", "a", "b"], "memory_kb": [8, 8, 24, 8],
                       "are_top15": [1.0, 3.0, 0.5, 2.0], "are_top15_mean_t": [2.0, 4.0, 1.0, 3.0],
                       "are_top15_max_t": [5.0, 7.0, 2.0, 4.0], "seconds": [1.0, 1.0, 1.0, 1.0]})
    table = continual_table(df, {"plot_args": {"x": "memory_kb"}})
    assert table.columns.tolist() == ["mechanism.name", "memory_kb", "are_top15", "are_top15_mean_t",
                                      "are_top15_max_t"]
    assert table.values.tolist() == [["a", 8, 2.0, 3.0, 6.0], ["a", 24, 0.5, 1.0, 2.0], ["b", 8, 2.0, 3.0, 4.0]]
    assert continual_table(df.drop(columns="are_top15_mean_t"), {}) is None


class _Tables(HTMLParser):
    """Every <table> of a page as {class, header cells, rows of cell texts}; text inside <code> is marked."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"class": dict(attrs).get("class"), "header": [], "rows": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "code" and self.cell is not None:
            self.cell.append("<code>")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            table = self.tables[-1]
            (table["header"] if tag == "th" else table["rows"][-1]).append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def parse_tables(page: str) -> dict[str, list[dict]]:
    parser = _Tables()
    parser.feed(page)
    out: dict[str, list[dict]] = {}
    for t in parser.tables:
        t["rows"] = [r for r in t["rows"] if r]  # the header row has no <td>
        out.setdefault(t["class"], []).append(t)
    return out


def check_report_html(page: str, claims_files: list) -> dict[str, list[dict]]:
    """The verdict summary equals the claims tables' counts; every row is complete; no raw backtick is left."""
    import pandas as pd

    from dpstream.claims import VERDICTS

    tables = parse_tables(page)
    (summary,) = tables["verdicts"]
    assert summary["header"] == ["kind", *VERDICTS, "total"]
    verdicts = pd.concat([pd.read_csv(p, keep_default_na=False) for p in claims_files])["verdict"]
    assert summary["rows"][-1][0] == "all rows of the claims tables"
    assert [int(c) for c in summary["rows"][-1][1:]] == [*(int((verdicts == v).sum()) for v in VERDICTS),
                                                         len(verdicts)]
    assert page.index("class='verdicts'") < page.index("class='provenance'")  # the summary comes first
    # every claim is listed once: paper claims and own hypotheses per experiment, implementation checks at the end
    listed = sum(len(t["rows"]) for key in ("claims", "checks") for t in tables.get(key, []))
    assert listed == len(verdicts)
    for table in (t for group in tables.values() for t in group):
        assert all(len(row) == len(table["header"]) for row in table["rows"]), table["header"]
        assert not any("`" in cell for row in table["rows"] for cell in row)
    return tables


def test_report_html_summarises_verdicts_first_and_renders_code_and_paper_names(tmp_path):
    import pandas as pd

    from dpstream.harness.report import write_report

    (tmp_path / "tables").mkdir()
    claims = {"a": [("`svt_tm` error | flat", "rule with `x < 1` & **bold**", "m", "confirmed"),
                    ("b", "r", "svt_sparse_short 3", "n/a")],
              "b": [("c", "r", "m", "inconclusive")]}
    for exp_id, rows in claims.items():
        pd.DataFrame(rows, columns=["claim", "rule", "measured", "verdict"]).to_csv(
            tmp_path / "tables" / f"{exp_id}.claims.csv", index=False)
    frame = pd.DataFrame({"mechanism.name": ["lazycms"], "memory_kb": [8], "are_top15": [1.0],
                          "are_top15_mean_t": [2.0], "are_top15_max_t": [3.0]})
    cfg = {"results_dir": str(tmp_path), "profile": {"name": "smoke"}, "seed": 0, "noise": "numpy",
           "backend": "loky", "n_jobs": 1}
    specs = [{"id": "a", "title": "A `title`", "plot_args": {"x": "memory_kb"}}, {"id": "b", "title": "B"}]
    write_report(specs, [frame, frame.iloc[:0]], cfg)
    page = (tmp_path / "report.html").read_text()
    tables = check_report_html(page, sorted((tmp_path / "tables").glob("*.claims.csv")))
    first = tables["claims"][0]["rows"][0]
    assert first[0] == "<code>ThresholdMonitor error | flat"
    assert "<code>x &lt; 1</code> &amp; <b>bold</b>" in page and "<h2>a: A <code>title</code></h2>" in page
    assert tables["claims"][0]["rows"][1][2] == "Sparse (cutoff c/2) 3"
    assert tables["continual"][0]["header"][0] == "mechanism" and tables["continual"][0]["rows"][0][0] == "LazyCMS"
    report = (tmp_path / "report.md").read_text()
    # claims the pre-registration does not list decide nothing: they are counted apart from the paper's sentences
    assert ("Verdicts: paper claims (each sentence once, the paper's setting): 0 confirmed, 0 not confirmed, "
            "0 inconclusive, 0 n/a (0 claims)") in report
    assert ("unregistered claims (decide nothing): 1 confirmed, 0 not confirmed, 1 inconclusive, 1 n/a "
            "(3 claims)") in report
    assert "| `ThresholdMonitor` error \\| flat |" in report


def test_a_report_whose_summary_disagrees_with_the_claims_fails_the_check(tmp_path):
    import pytest

    (tmp_path / "x.claims.csv").write_text("claim,rule,measured,verdict\nA,r,m,confirmed\nB,r,m,n/a\n")
    head = "<table class='verdicts'><thead><tr><th>kind</th><th>confirmed</th><th>not confirmed</th>" \
           "<th>inconclusive</th><th>n/a</th><th>total</th></tr></thead><tbody><tr><td>all rows of the claims " \
           "tables</td><td>{}</td><td>0</td><td>0</td><td>1</td><td>2</td></tr></tbody></table>" \
           "<table class='provenance'></table>"
    claims = "<table class='claims'><thead><tr><th>claim</th></tr></thead><tbody><tr><td>A</td></tr>" \
             "<tr><td>B</td></tr></tbody></table>"
    check_report_html(head.format(1) + claims, [tmp_path / "x.claims.csv"])
    with pytest.raises(AssertionError):
        check_report_html(head.format(2) + claims, [tmp_path / "x.claims.csv"])
    with pytest.raises(AssertionError):
        check_report_html(head.format(1) + claims.replace("<td>A</td>", "<td>`A`</td>"),
                          [tmp_path / "x.claims.csv"])


def test_committed_report_html_agrees_with_the_committed_claims_tables():
    check_report_html((ROOT / "results" / "report.html").read_text(),
                      sorted((ROOT / "results" / "tables").glob("*.claims.csv")))


def test_the_report_states_each_experiments_compute_cost_from_the_trial_wall_times():
    import pandas as pd

    from dpstream.harness.report import compute_cost

    cost = compute_cost(pd.DataFrame({"trial_wall_s": [30.0, 90.0]}))
    assert cost == "; computed in 2 min of trial wall time (one worker)"
    assert "1 rows without it" in compute_cost(pd.DataFrame({"trial_wall_s": [60.0, None]}))
    assert "not recorded" in compute_cost(pd.DataFrame({"x": [1]}))
