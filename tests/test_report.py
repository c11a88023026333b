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
