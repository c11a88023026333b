"""dpstream experiment runner.

    python run.py mechanism=lazycms            # one mechanism, `trials` seeded trials
    python run.py experiment=fig3a             # a paper panel at paper scale
    python run.py experiment=fig3 profile=smoke
    python run.py -m epsilon=0.1,0.3,1         # Hydra multirun sweep
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from dpstream.harness.runner import run

CONF_DIR = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    run(cfg, conf_dir=CONF_DIR, overrides=list(HydraConfig.get().overrides.task))


if __name__ == "__main__":
    main()
