"""`experiment=all profile=smoke` regenerates every experiment and writes the report with every claim."""

from conftest import CONF_DIR, ROOT
from omegaconf import OmegaConf

from dpstream.harness.config import load_experiment
from dpstream.harness.runner import run


def leaves(name: str) -> list[str]:
    spec = load_experiment(CONF_DIR, name, "smoke")
    return [leaf for part in spec["parts"] for leaf in leaves(part)] if spec.get("parts") else [name]


def test_all_covers_every_experiment_file():
    files = {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")}
    aggregates = {n for n in files if "parts" in OmegaConf.load(CONF_DIR / "experiment" / f"{n}.yaml")}
    assert set(leaves("all")) == files - aggregates


def test_smoke_report_lists_every_experiment_and_claim(compose_cfg, smoke_results):
    cfg = compose_cfg(["experiment=all", "profile=smoke", f"results_dir={smoke_results}",
                       f"data_dir={ROOT / 'data'}", "n_jobs=2"])
    frames = run(cfg, CONF_DIR)
    report = (smoke_results / "report.md").read_text()
    html = (smoke_results / "report.html").read_text()
    assert len(frames) == len(leaves("all"))
    for exp_id in leaves("all"):
        assert f"## {exp_id}:" in report and f"{exp_id}:" in html
    for claims in (smoke_results / "tables").glob("*.claims.csv"):
        first_claim = claims.read_text().splitlines()[1].split(",")[0].strip('"')
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
