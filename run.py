"""Alias of the ``dpstream`` command for a source checkout: ``python run.py ...`` == ``dpstream ...``.

Usage:
    python run.py --help                      # usage, experiments, mechanisms, data
    python run.py mechanism=lazycms           # one mechanism, `trials` seeded trials
    python run.py experiment=fig3 profile=smoke
    python run.py -m epsilon=0.1,0.3,1        # Hydra multirun sweep
"""

from dpstream.cli import main

if __name__ == "__main__":
    main()
