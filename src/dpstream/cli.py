"""The ``dpstream`` command (also ``python -m dpstream`` and ``python run.py``).

The Hydra app over the package's ``conf/`` (experiments included), so it runs from any directory and from a wheel.

    dpstream --help                                 # usage, then every experiment, mechanism and data source
    dpstream mechanism=lazycms                      # one mechanism, `trials` seeded trials
    dpstream experiment=fig3a profile=smoke         # a paper panel, shrunk
    dpstream -m epsilon=0.1,0.3,1                   # a sweep: every combination, one run, one table

Each run writes its tables and figures to its own folder, ``./results/runs/<run>/`` of the working directory
(``./results/smoke/runs/<run>/`` for profile=smoke; ``dpstream.harness.layout``) unless ``results_dir=...`` moves the
root; the committed reproduction is written only with ``reproduction=true`` (``make figures``, ``make verify``).
Bad input (a value, a file, a folder, a full disk, a size beyond memory: ``dpstream.errors.bad_input``) prints one
line, ``error: <key>=<value>: <what is allowed>`` or ``error: <what>``, and exits with status 2, before or during the
run; ``HYDRA_FULL_ERROR=1`` shows the traceback instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn, cast

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf

from dpstream.errors import ConfigError, bad_input
from dpstream.errors import one_line as error_line
from dpstream.harness.config import check_override
from dpstream.harness.natural import natural_data
from dpstream.registry import CONF_DIR, options

CHOICE_GROUPS = ("mechanism", "data", "profile", "experiment")
FOLDER_KEYS = ("results_dir", "data_dir")  # folders a run writes: checked before Hydra makes its output folder
USAGE = """\
usage: dpstream [key=value ...]                 one run: mechanism x data, `trials` seeded trials
       dpstream experiment=<id> [key=value ...] a sweep; profile=smoke shrinks it to seconds
       dpstream -m key=a,b [key=c,d ...]         a sweep: every combination in one run, one table
       dpstream --cfg job [key=value ...]        print the config that would run (add --resolve)
       dpstream cache list | clear [FOLDER ...]  generated / downloaded data under ./data, with sizes
       dpstream watch SOURCE [--help]            private heavy hitters of a live link (pcap on stdin: -)
       dpstream live RELEASES [--port N]         a page on localhost drawing watch's JSON lines (stdin: -)
       dpstream --version                        dpstream's version; --hydra-help: Hydra's own flags
Results go to ./results/runs/<run>/ of the working directory (./results/smoke/... with profile=smoke); results_dir=DIR
moves the root.
Top-level keys: {keys}
A bad value prints `error: <key>=<value>: <what is allowed>` and exits 2 (HYDRA_FULL_ERROR=1: full traceback).
"""


def full_error() -> bool:
    """Whether ``HYDRA_FULL_ERROR=1`` asks for the full traceback instead of one line."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


def yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML config file as a plain dict, interpolations unresolved (a file that is not a mapping is an error)."""
    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if not isinstance(spec, dict):
        raise ValueError(f"{path} must hold a mapping of keys to values, got {type(spec).__name__}")
    return cast(dict[str, Any], spec)


def one_line(path: Path) -> str:
    """What a config file is, in one line: its ``title``, else its ``description``, else its first comment sentence."""
    spec = OmegaConf.load(path)
    for key in ("title", "description"):
        if isinstance(spec, DictConfig) and isinstance(spec.get(key), str):
            return spec[key]
    comment = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("# ").strip())
    # the first sentence: up to ". " or "; ", not after an abbreviation (Sec. 6, Alg. 5, et al. 2023)
    sentence = re.split(r"(?<!Sec\.)(?<!Alg\.)(?<!Fig\.)(?<!Thm\.)(?<!Eq\.)(?<!al\.)(?<=[.;])\s",
                        " ".join(comment), maxsplit=1)[0].rstrip(";")
    return sentence


def kind_tag(group: str, spec: Any) -> str:
    """``[stream]`` after a data source, ``[stream,none]`` after a mechanism (what it reads); nothing elsewhere."""
    kinds = spec.get("kind") if group == "data" else spec.get("data_kinds") if group == "mechanism" else None
    if kinds is None:
        return "" if group == "experiment" else "[undeclared] "
    return f"[{','.join(kinds) if isinstance(kinds, list | ListConfig) else kinds}] "


def catalog(conf_dir: Path = CONF_DIR) -> str:
    """Every experiment, mechanism and data source with one line each (what ``dpstream --help`` prints)."""
    base = yaml_mapping(conf_dir / "config.yaml")
    keys = " ".join(f"{k}={v}" for k, v in base.items() if k not in ("defaults", "hydra"))
    out = [USAGE.format(keys=keys)]
    for group, label in (("experiment", "experiments"), ("mechanism", "mechanisms"), ("data", "data")):
        names = options(conf_dir, group)
        width = max(map(len, names))
        out.append(f"{label} ({group}=<name>):")
        for name in names:
            path = conf_dir / group / f"{name}.yaml"
            # the whole first sentence, never cut (one entry per line: the terminal wraps a long one)
            out.append(f"  {name:<{width}}  {kind_tag(group, OmegaConf.load(path))}{one_line(path)}")
        out.append("")
    out.append("[kind] after a mechanism: the data kinds it reads; after a data source: its kind.")
    return "\n".join(out)


def typed_overrides(args: list[str]) -> list[tuple[str, str]]:
    """The plain ``key=value`` overrides among command-line ``args``.

    Flags, ``+``/``~`` edits and ``hydra.*`` are left out; Hydra handles those.
    """
    out = []
    for arg in args:
        if arg.startswith(("-", "+", "~")) or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        if key.split(".", 1)[0] != "hydra":
            out.append((key, value))
    return out


def search_dirs(args: list[str]) -> list[Path]:
    """The package's conf dir and any ``file://`` dirs of ``hydra.searchpath=[...]`` (e.g. your own experiments)."""
    dirs = [CONF_DIR]
    for arg in args:
        if arg.startswith("hydra.searchpath="):
            dirs += [Path(p) for p in re.findall(r"file://([^,\]\s'\"]+)", arg)]
    return dirs


def precheck(args: list[str]) -> DictConfig | None:
    """Check the typed overrides against the default config before Hydra composes it.

    An unknown option, an unknown key or a non-number where a number belongs is then one ``ConfigError`` naming the
    typed key. Returns the config Hydra composed of ``args`` (None for a sweep, or with ``hydra.*`` overrides).
    """
    typed = typed_overrides(args)
    dirs = search_dirs(args)
    choices = {g: sorted({n for d in dirs for n in options(d, g)}) for g in CHOICE_GROUPS}
    defaults, unchecked = chosen_defaults(typed, dirs, choices)
    for key, value in typed + added_keys(args):
        if key not in CHOICE_GROUPS and key.split(".", 1)[0] not in unchecked:
            check_override(key, value, defaults, choices)
    check_deletions(args, defaults, unchecked)
    composed = check_with_hydra(args)
    check_folders(composed)
    return composed if composes_whole(args) else None


def composes_whole(args: list[str]) -> bool:
    """Whether ``args`` compose as one config of the package: not a sweep, no other search path (Hydra's to compose)."""
    sweep = bool({"-m", "--multirun"} & set(args))
    return not (sweep or any(o.startswith("hydra.searchpath") for o in hydra_overrides(args)))


def chosen_defaults(typed: list[tuple[str, str]], dirs: list[Path],
                    choices: dict[str, list[str]]) -> tuple[dict[str, Any], set[str]]:
    """The default config with the group options ``typed`` chooses (checked against ``choices``) loaded in.

    And the groups chosen by a sweep function (``glob(*)``), whose keys are left to Hydra.
    """
    defaults = yaml_mapping(CONF_DIR / "config.yaml")
    defaults.pop("hydra", None)
    chosen: dict[str, Any] = {g: None for g in CHOICE_GROUPS}
    for entry in defaults.pop("defaults"):
        if isinstance(entry, dict):
            chosen.update({group: name for group, name in entry.items() if group in chosen})
    for key, value in typed:
        if key in CHOICE_GROUPS:
            check_override(key, value, {}, choices)
            chosen[key] = value.split(",")[0].strip()
    unchecked = set()
    for group, name in chosen.items():
        found = [d / group / f"{name}.yaml" for d in dirs if (d / group / f"{name}.yaml").exists()]
        defaults[group] = OmegaConf.to_container(OmegaConf.load(found[0])) if found else None
        if name not in (None, "null") and not found:
            unchecked.add(group)
    return defaults, unchecked


def added_keys(args: list[str]) -> list[tuple[str, str]]:
    """The ``+key=value`` and ``++key=value`` overrides (a key Hydra would add, or add or set).

    Checked like typed keys, so an unknown key is an error: a run reads no key it does not know.
    """
    out = []
    for arg in args:
        edit = arg.lstrip("+")
        if arg.startswith("+") and len(arg) - len(edit) <= 2 and "=" in edit:
            key, value = edit.split("=", 1)
            if key not in CHOICE_GROUPS and key.split(".", 1)[0] != "hydra":
                out.append((key, value))
    return out


def check_deletions(args: list[str], defaults: dict[str, Any], unchecked: set[str]) -> None:
    """Refuse a ``~key`` override of a key the config has: the run reads it (``hydra.*`` is Hydra's).

    A key the config lacks is left to Hydra, which says so.
    """
    for arg in args:
        key = arg[1:].split("=", 1)[0]
        head = key.split(".", 1)[0]
        if arg.startswith("~") and head != "hydra" and head not in unchecked and exists(defaults, key):
            raise ValueError(f"~{key}: a key of the config cannot be deleted (the run reads it); set {key}=<value> "
                             "instead")


def exists(config: dict[str, Any], key: str) -> bool:
    """Whether the dotted ``key`` names an entry of the nested ``config``."""
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def hydra_overrides(args: list[str]) -> list[str]:
    """The overrides among ``args`` (``key=value``, ``+``/``~`` edits), without the flags and their values."""
    flags_with_value = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                        "--config-dir", "-cd", "--info", "-i", "--experimental-rerun"}
    out = []
    for i, arg in enumerate(args):
        if arg.startswith("-") or (i > 0 and args[i - 1] in flags_with_value):
            continue
        out.append(arg)
    return out


def check_with_hydra(args: list[str]) -> DictConfig | None:
    """Hydra's own override grammar (and, outside a sweep, its composition): a failure is one ``ValueError``.

    So ``key=[1,`` or ``~missing`` or ``+epsilon=1`` end like every other bad input (``error: ...``, status 2)
    instead of in Hydra's multi-line report. Returns the composed config; for a sweep, or with another search path,
    the config composed of the overrides that choose the folders only (None if that fails: Hydra reports it).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    overrides = hydra_overrides(args)
    parser = OverridesParser.create()
    parsed = []
    for override in overrides:
        try:
            parsed += parser.parse_overrides([override])
        except HydraException as exc:
            raise ValueError(f"{override}: {one_sentence(exc)}") from exc
    whole = composes_whole(args)
    chosen = [o for o, p in zip(overrides, parsed, strict=True) if whole or
              (p.key_or_group in (*FOLDER_KEYS, "profile") and not p.is_sweep_override())]
    try:
        return compose_config(chosen)
    except ValueError:
        if whole:
            raise
        return None


def compose_config(overrides: list[str]) -> DictConfig:
    """The package's config composed with ``overrides`` by Hydra's compose API; a failure is one ``ValueError``."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ValueError(one_sentence(exc)) from exc


def check_folders(cfg: DictConfig | None) -> None:
    """``results_dir`` and ``data_dir`` of the composed ``cfg`` must be folders or creatable; ``results_dir`` writable.

    Checked before Hydra creates its output folder inside ``results_dir`` (``/dev/null``, ``/proc/self``, a read-only
    folder would fail there with a traceback). Nothing is created: writing is tried in the nearest existing folder.
    """
    from omegaconf.errors import OmegaConfBaseException

    if cfg is None:
        return
    for key in FOLDER_KEYS:
        try:
            value = str(cfg[key])
        except OmegaConfBaseException:
            continue  # an interpolation Hydra will report
        path = Path(value).expanduser()
        existing = path
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir():
            raise ConfigError(key, value, f"must be a folder, but {existing} is a file")
        if key == "results_dir":
            try:
                os.rmdir(tempfile.mkdtemp(prefix=".dpstream-probe-", dir=existing))
            except OSError as exc:
                raise ConfigError(key, value, f"cannot write in {existing} ({exc.strerror}); choose a folder you "
                                              "can write to") from exc


def one_sentence(exc: Exception) -> str:
    """Hydra's message on one line, pointing at the override grammar."""
    text = " ".join(str(exc).split())
    return text if "hydra.cc" in text else f"{text} (override grammar: https://hydra.cc/docs/advanced/override_grammar/basic)"


def explain(exc: BaseException, typed: list[tuple[str, str]]) -> str:
    """The one-line form of a bad-input error (``errors.bad_input``), with the key as the user typed it.

    ``ConfigError`` carries its key; a plain ``ValueError`` from a validator (``"<name> must ..., got <value>"``) is
    mapped to the typed key whose last part is ``<name>`` (``data.skew``, not ``skew``); any other says what it is
    (``errors.one_line``).
    """
    exc = bad_input(exc) or exc
    if isinstance(exc, ConfigError):
        return f"error: {' '.join(f'{exc.key}={exc.value}: {exc.allowed}'.split())}"
    message = error_line(exc)
    if not isinstance(exc, ValueError):
        return f"error: {message}"
    found = re.match(r"(?P<name>[A-Za-z_][\w.]*) must (?P<rule>.*?)(?:, got (?P<got>.*))?$", message)
    if not found:
        return f"error: {message}"
    name = found["name"]
    key, value = next(((k, v) for k, v in typed if k == name or k.endswith("." + name)), (name, found["got"]))
    return f"error: {key}={shown_value(key, value, found['got'])}: must {found['rule']}"


def shown_value(key: str, typed: str | None, got: str | None) -> str | None:
    """The value an error about ``key`` names: the one the validator ``got``, as the user typed it.

    A swept key's typed override holds its first value only (``split_sweep``), so the swept values (``SWEEP``) and
    the typed ones (``a,b`` before the split) are searched for the one equal to ``got`` (``-1`` for ``got -1.0``). A
    swept key none of whose values is ``got`` names ``got``; an unswept key names what was typed.
    """
    if got is None:
        return typed
    candidates = [v.strip() for v in (typed or "").split(",")] + [str(v) for v in SWEEP.get(key, [])]
    match = next((c for c in candidates if same_value(c, got)), None)
    if match is not None:
        return match
    return got if key in SWEEP else typed


def same_value(text: str, got: str) -> bool:
    """Whether the typed ``text`` is the value a validator printed as ``got`` (its repr: quoted, or a float)."""
    got = got.strip().strip("'\"")
    if text == got:
        return True
    try:
        return float(text) == float(got)
    except ValueError:
        return False


def fail(exc: BaseException, typed: list[tuple[str, str]]) -> NoReturn:
    """Print the one-line explanation of a bad-input error and exit with status 2."""
    print(explain(exc, typed), file=sys.stderr, flush=True)
    raise SystemExit(2)


@contextlib.contextmanager
def one_line_errors(typed: list[tuple[str, str]]) -> Iterator[None]:
    """Bad input raised inside (``errors.bad_input``) ends in one line and status 2 (``fail``); a defect is raised."""
    try:
        yield
    except Exception as exc:
        if bad_input(exc) is None or full_error():
            raise
        fail(exc, typed)


SWEEP: dict[str, list[Any]] = {}
"""The keys ``-m`` sweeps, with their values (``split_sweep``): the run's grid, set by ``main`` before ``app`` runs."""
NOT_SWEPT = ("profile", "hydra")  # besides the run settings (``config.RUN_KEYS``); experiment=a,b runs both


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def app(cfg: DictConfig) -> None:
    """The Hydra task: run the composed config (``dpstream.harness.runner.run``), over ``SWEEP`` if ``-m`` set one."""
    from dpstream.harness.runner import run, stop_status  # imported here so that --help and errors stay fast

    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    try:
        own = [Path(p.removeprefix("file://")) for p in hydra_cfg.searchpath if p.startswith("file://")]
        run(cfg, conf_dir=[CONF_DIR, *own], overrides=overrides, sweep=SWEEP)
    except BaseException as exc:
        status = stop_status(exc)
        if status is not None:
            print("\nstopped: finished trials are in the results store; the same command resumes the run",
                  file=sys.stderr, flush=True)
            raise SystemExit(status) from None
        if bad_input(exc) is None or full_error():
            raise
        fail(exc, typed_overrides(overrides))


def split_sweep(args: list[str]) -> tuple[list[str], dict[str, list[Any]]]:
    """The arguments of one run and the keys ``-m`` sweeps: ``(args, {key: values})``.

    Each swept ``key=a,b`` (or ``range(...)``, or ``glob(...)`` over a group's options) is left in the run's
    arguments at its first value, so Hydra composes one valid config; the harness then runs every combination as one
    grid (``runner.plan``): one run, one table, one smoke profile, every point checked before the first trial.
    ``experiment=a,b`` runs the experiments one after the other, each over the other swept keys. A run setting
    (``trials``, ``n_jobs``, ``results_dir``, ...) or ``profile`` is not swept.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob

    from dpstream.harness.config import RUN_KEYS

    dirs = search_dirs(args)
    parser = OverridesParser.create()
    out, sweep = [], {}
    for arg in args:
        if arg in ("-m", "--multirun"):
            continue
        if arg.startswith("-") or arg not in hydra_overrides(args):
            out.append(arg)
            continue
        override, = parser.parse_overrides([arg])
        if not override.is_sweep_override():
            out.append(arg)
            continue
        key = override.key_or_group
        value = arg.split("=", 1)[1]
        if key.split(".", 1)[0] in (*NOT_SWEPT, *[k for k in RUN_KEYS if k != "experiment"]):
            raise ConfigError(key, value, "a run setting, not a parameter: run the command once per value")
        glob = override.value()
        if isinstance(glob, Glob):
            values: list[Any] = glob.filter(sorted({n for d in dirs for n in options(d, key)}))
            shown = values
        elif override.is_discrete_sweep():
            values = list(override.sweep_iterator())
            shown = list(override.sweep_string_iterator())
        else:
            raise ConfigError(key, value, "a sweep lists its values (a,b,c), range(...) or glob(...)")
        if not values:
            raise ConfigError(key, value, "sweeps no value")
        sweep[key] = values
        out.append(f"{override.get_key_element()}={shown[0]}")
    return out, sweep


def main(argv: list[str] | None = None) -> None:
    """Console entry point: ``--help`` / ``list`` print the catalog; overrides are checked, then Hydra runs."""
    args = sys.argv[1:] if argv is None else list(argv)
    if "--version" in args or "-V" in args:
        from dpstream import __version__

        print(f"dpstream {__version__}")
        return
    if args[:1] == ["cache"]:
        raise SystemExit(cache_command(args[1:]))
    if args[:1] == ["watch"]:
        from dpstream.watch import main as watch_main  # imported here so that the Hydra app starts as fast

        raise SystemExit(watch_main(args[1:]))
    if args[:1] == ["live"]:
        from dpstream.live.server import main as live_main

        raise SystemExit(live_main(args[1:]))
    if args[:1] == ["list"] or "-h" in args or "--help" in args:
        print(catalog())
        return
    SWEEP.clear()
    with one_line_errors(typed_overrides(args)):
        composed = precheck(args)
        if {"-m", "--multirun"} & set(args):
            args, sweep = split_sweep(args)
            SWEEP.update(sweep)
            composed = precheck(args)
    natural = with_natural_data(args)
    if wants_job_config(natural):
        print(show_job(natural, composed if natural == args else None))  # composed again only with data added
        return
    args = natural
    sys.argv = [sys.argv[0], *args]
    with one_line_errors(typed_overrides(args)):
        app()


def with_natural_data(args: list[str]) -> list[str]:
    """``args`` plus the data overrides of a mechanism named alone (data of a kind it reads), said on stderr."""
    natural = natural_data(args)
    if natural:
        print(f"note: mechanism={dict(typed_overrides(args))['mechanism']} runs on {' '.join(natural)} "
              "(name data=... to choose)", file=sys.stderr, flush=True)
    return [*args, *natural]


def cache_command(args: list[str]) -> int:
    """``dpstream cache list`` / ``dpstream cache clear [FOLDER ...]`` over ``data_dir`` (``data_dir=DIR``; ./data).

    Lists or removes the generated and downloaded data (Zipf streams, converted traces, word lists) with sizes.
    """
    from dpstream.data.cache import cache_entries, clear_cache
    from dpstream.validation import readable_bytes

    data_dir = next((a.split("=", 1)[1] for a in args if a.startswith("data_dir=")), "data")
    rest = [a for a in args if not a.startswith("data_dir=")]
    if rest[:1] not in (["list"], ["clear"]):
        print(f"error: cache {' '.join(rest)}: allowed: dpstream cache list | dpstream cache clear [FOLDER ...] "
              "[data_dir=DIR]", file=sys.stderr)
        return 2
    entries = cache_entries(data_dir)
    if rest[0] == "list":
        if not entries:
            print(f"no cached data in {data_dir}/")
        for name, files, size in entries:
            print(f"{readable_bytes(size):>10}  {files:>6} files  {Path(data_dir) / name}")
        if entries:
            total = sum(e[2] for e in entries)
            print(f"{readable_bytes(total):>10}  {sum(e[1] for e in entries):>6} files  total; "
                  "`dpstream cache clear` removes them (regenerated or downloaded again when needed)")
        return 0
    try:
        files, size = clear_cache(data_dir, rest[1:] or None)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"removed {files} files ({readable_bytes(size)}) from {data_dir}/")
    return 0


def wants_job_config(args: list[str]) -> bool:
    """``--cfg job`` (or ``-c job``): answered by ``show_job``, not by Hydra (a sweep has been split by then)."""
    flags = {"-m", "--multirun", "-p", "--package"}
    return any(a in ("--cfg", "-c") and args[i + 1:i + 2] == ["job"] for i, a in enumerate(args)) and \
        not flags & set(args)


def show_job(args: list[str], composed: DictConfig | None = None) -> str:
    """The configs that will run, as the harness expands them (profile overrides and experiment sweeps applied).

    What Hydra's own ``--cfg job`` cannot show, since the profile and the sweep are applied by the harness.
    """
    from dpstream.harness.runner import describe, plan

    overrides = [a for i, a in enumerate(args) if a not in ("--cfg", "-c", "--resolve")
                 and not (a == "job" and i > 0 and args[i - 1] in ("--cfg", "-c"))]
    with one_line_errors(typed_overrides(overrides)):
        return describe(plan(composed if composed is not None else compose_config(overrides), CONF_DIR, overrides,
                             SWEEP))


if __name__ == "__main__":
    main()
