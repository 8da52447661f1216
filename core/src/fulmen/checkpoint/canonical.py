"""The canonical checkpoint: the one format every strategy writes and every strategy reads.

It is a single ``torch.save`` file when one process holds the whole state, or else a
``torch.distributed.checkpoint`` (DCP) directory written by every rank:

- ``.metadata`` and ``__<rank>_<n>.distcp``: DCP's files, holding the entries that carry
  sharded tensors (always ``state_dict`` and ``optimizer_states`` for the Trainer);
- ``meta.pt``: every other entry (progress, hyper-parameters, callbacks...), from rank 0;
- ``rng/rank_<r>.pt``: each rank's random-number-generator states, written by that rank
  (its entry of ``rng_states_per_rank``, :mod:`fulmen.checkpoint.rng`);
- ``fulmen_manifest.json``: where it came from (:func:`fulmen.checkpoint.manifest.origin`)
  and the size and CRC-32C of every file.

Optimizer states are keyed by parameter names (``get_optimizer_state_dict``'s form), not by
positions, so they load into any strategy's optimizer: DCP reshards DTensor shards to the
reader's world size, and ``set_optimizer_state_dict`` distributes full tensors.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fulmen.checkpoint import manifest, safety
from fulmen.checkpoint.optimizer_state import (  # noqa: F401 - canonical's public names
    by_name,
    by_number,
    is_keyed_by_name,
    load_optimizer_state,
    numbered,
    optimizer_state,
    param_names,
)
from fulmen.errors import ConfigurationError

if TYPE_CHECKING:

    from fulmen.api.strategy import Strategy

META = "meta.pt"
RNG_DIR = "rng"
_SUMS = ".fulmen-sums-rank"  # each rank's checksums of its files, merged into the manifest
#: Entries that always go to DCP shards in a directory checkpoint.
SHARDED_KEYS = ("state_dict", "optimizer_states")
_DCP_KEYS = "fulmen_dcp_keys"
_LISTS = "fulmen_dcp_lists"


# ====================================================================== writing


def holds(value: Any, kind: type) -> bool:
    """Whether ``value`` (nested dicts, lists) holds an instance of ``kind``."""
    if isinstance(value, kind):
        return True
    if isinstance(value, Mapping):
        return any(holds(v, kind) for v in value.values())
    if isinstance(value, list | tuple):
        return any(holds(v, kind) for v in value)
    return False


def split(checkpoint: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(shards, meta)``: the entries DCP writes (``SHARDED_KEYS`` and any holding a
    DTensor; lists become dicts keyed "0", "1"...) and the rest."""
    from torch.distributed.tensor import DTensor

    shards: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    lists = []
    for key, value in checkpoint.items():
        if key in SHARDED_KEYS or holds(value, DTensor):
            if isinstance(value, list):
                lists.append(key)
                value = {str(i): v for i, v in enumerate(value)}
            shards[key] = value
        else:
            meta[key] = value
    meta[_DCP_KEYS], meta[_LISTS] = sorted(shards), lists
    return shards, meta


def save_directory(strategy: Strategy, checkpoint: dict[str, Any], path: Any) -> None:
    """Every rank: write ``checkpoint`` as a canonical DCP directory at ``path``, staged in
    a temporary folder and renamed into place once every rank's files and the manifest are
    there."""
    import torch
    import torch.distributed.checkpoint as dcp

    from fulmen.checkpoint import rng

    shards, meta = split(checkpoint)
    per_rank = meta.pop(rng.KEY, None)  # each rank writes its own entry
    rank = strategy.global_rank
    entry = per_rank[rank] if isinstance(per_rank, list) and rank < len(per_rank) \
        else rng.own()
    with staged_directory(strategy, Path(path)) as staging:
        # DCP's own fsync (sync_files) is done below, overlapped with the checksums.
        dcp.save(shards, storage_writer=dcp.FileSystemWriter(str(staging), sync_files=False))
        (staging / RNG_DIR).mkdir(exist_ok=True)
        torch.save(entry, staging / RNG_DIR / f"rank_{rank}.pt")
        mine = [*sorted(staging.glob(f"__{rank}_*.distcp")), staging / RNG_DIR / f"rank_{rank}.pt"]
        if strategy.is_global_zero:
            torch.save(meta, staging / META)
            mine += [staging / ".metadata", staging / META]
        # Each rank checksums the files it wrote, all at once, while they are in the page cache
        # and while a thread flushes them to the device.
        sums = staging / f"{_SUMS}{rank}.json"
        sums.write_text(json.dumps(manifest.file_entries(staging, mine, flush=True)))
        strategy.barrier("canonical-save")
        if strategy.is_global_zero:
            facts = dict(meta.get(manifest.KEY) or manifest.origin(
                strategy.name, strategy.world_size, strategy.num_nodes,
                strategy.precision.name, strategy.device_mesh, strategy.data_parallel_size))
            facts["layout"] = "dcp"
            known: dict[str, Any] = {}
            for part in sorted(staging.glob(f"{_SUMS}*.json")):
                known.update(json.loads(part.read_text()))
                part.unlink()
            manifest.write_directory_manifest(staging, facts, known)


class staged_directory:
    """A temporary folder beside ``target`` (named by rank 0, shared by broadcast) that
    replaces ``target`` when the block ends without error, after a barrier."""

    def __init__(self, strategy: Strategy, target: Path) -> None:
        self.strategy, self.target = strategy, target
        self.staging: Path | None = None

    def __enter__(self) -> Path:
        from fulmen.checkpoint.atomic import release_cached_pages, sweep, temporary_path

        name = None
        if self.strategy.is_global_zero:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            sweep(self.target.parent)
            if self.target.is_dir() and not self.target.is_symlink():
                for file in self.target.rglob("*"):  # the new files recycle their pages
                    if file.is_file():
                        release_cached_pages(file)
            name = str(temporary_path(self.target))
        self.staging = Path(self.strategy.broadcast(name, 0))
        self.staging.mkdir(parents=True, exist_ok=True)
        return self.staging

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        import shutil

        assert self.staging is not None
        if kind is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            return
        self.strategy.barrier("canonical-staged")
        if self.strategy.is_global_zero:
            from fulmen.checkpoint.atomic import replace_directory

            replace_directory(self.staging, self.target)
        self.strategy.barrier("canonical-committed")


# ====================================================================== reading


def read_meta(root: Path, weights_only: bool = True) -> dict[str, Any]:
    """A canonical directory's ``meta.pt`` (read safely unless ``weights_only`` is False)."""
    import torch

    file = root / META
    if not file.is_file():
        raise ConfigurationError(f"checkpoint {str(root)!r} is a DCP directory without "
                                 f"{META}: not a fulmen checkpoint (fulmen checkpoint convert "
                                 "turns a plain DCP directory into one)")
    meta = safety.load_file(file) if weights_only else torch.load(
        file, map_location="cpu", weights_only=False)
    if not isinstance(meta, dict):
        raise ConfigurationError(f"{str(file)!r} holds a {type(meta).__name__}, not fulmen's "
                                 "checkpoint metadata")
    return meta


def check_directory(root: Path, share: tuple[int, int] | None = None) -> dict[str, Any]:
    """Refuse a DCP directory that is incomplete, mixed with another checkpoint, newer than
    this fulmen, or whose manifest does not match its shards; returns the manifest. With
    ``share`` (``(index, count)`` of the processes reading it together), this process also
    compares the checksums of its share of the files."""
    try:
        facts = manifest.read_directory_manifest(root) or {}
    except ValueError as exc:
        raise safety.CorruptCheckpointError(str(exc)) from exc
    manifest.check_version(facts, str(root))
    manifest.check_complete(root)
    listed = facts.get("files", {})
    shards = sorted(p.name for p in root.glob("*.distcp"))
    if listed:
        stray = [name for name in shards if name not in listed]
        if stray:
            raise ConfigurationError(
                f"checkpoint {str(root)!r} mixes files of two checkpoints: {stray[:4]} are not "
                f"listed in its {manifest.FILE}. Save each checkpoint to its own directory; "
                "remove the stray files or restore the directory from a good copy")
    size = facts.get("world_size")
    ranks = {name.split("_")[2] for name in shards if name.count("_") >= 3}
    if isinstance(size, int) and facts.get("layout") == "dcp" and len(ranks) != size:
        raise ConfigurationError(
            f"checkpoint {str(root)!r}: its manifest says world size {size}, but shards of "
            f"{len(ranks)} rank(s) are present ({shards[:6]}); a shard is missing or the "
            "directory was copied in part")
    if share is not None:
        manifest.check_checksums(root, listed, share)
    return facts


def load_directory(root: Path, template: dict[str, Any] | None = None,
                   weights_only: bool = True, share: tuple[int, int] = (0, 1)
                   ) -> dict[str, Any]:
    """Read a canonical DCP directory. With ``template`` (entries shaped like this
    strategy's state: DTensor shards, say), DCP reads each rank's part into it, resharding
    from any world size; without, every tensor is read whole. ``share``: this process's
    ``(index, count)`` among those reading it together, which split the checksum checks."""
    from fulmen.checkpoint.reading import safe_dcp_load

    check_directory(root, share)
    meta = read_meta(root, weights_only)
    keys = list(meta.pop(_DCP_KEYS, SHARDED_KEYS))
    lists = set(meta.pop(_LISTS, ["optimizer_states"]))  # older directories: that one
    if template is not None:
        state = {k: ({str(i): v for i, v in enumerate(template[k])} if k in lists and
                     isinstance(template[k], list) else template[k])
                 for k in keys if k in template}
        safe_dcp_load(state, root, weights_only=weights_only)
        missing = [k for k in keys if k not in template]
        if missing:
            state.update(read_full(root, missing, weights_only))
    else:
        state = read_full(root, keys, weights_only)
    for key in lists & set(state):
        value = state[key]
        state[key] = [value[str(i)] for i in range(len(value))]
    meta.update(state)
    return meta


def read_full(root: Path, keys: list[str] | None = None,
              weights_only: bool = True) -> dict[str, Any]:
    """Every entry (or those under ``keys``) of a DCP directory, with whole tensors; this
    process reads alone (no collective)."""
    import torch

    from fulmen.checkpoint.reading import safe_dcp_load

    out: dict[str, Any] = {}
    for _, path, entry in items(root):
        if keys is None or path[0] in keys:
            size = getattr(entry, "size", None)
            place(out, path, None if size is None else
                  torch.empty(tuple(size), dtype=entry.properties.dtype))
    if out:
        safe_dcp_load(out, root, weights_only, no_dist=True)
    return out


def items(root: Path) -> list[tuple[str, tuple[Any, ...], Any]]:
    """``(flat key, path, entry)`` for each item of a DCP directory, in saved order: ``path``
    is its nesting (``("state_dict", "net.0.weight")``), ``entry`` DCP's metadata (a
    ``TensorStorageMetadata`` with ``size`` and ``properties.dtype``, or bytes)."""
    from fulmen.checkpoint.reading import read_dcp_metadata

    metadata = read_dcp_metadata(root)
    nesting = getattr(metadata, "planner_data", None) or {}
    return [(flat, tuple(nesting.get(flat, (flat,))), entry)
            for flat, entry in metadata.state_dict_metadata.items()]


def read_item(root: Path, flat: str, entry: Any, weights_only: bool = True) -> Any:
    """One item of a DCP directory, read alone (a whole tensor, or a pickled object read
    with the safe unpickler)."""
    import torch
    from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner

    from fulmen.checkpoint.reading import safe_dcp_load

    size = getattr(entry, "size", None)
    holder: dict[str, Any] = {flat: None if size is None else
                              torch.empty(tuple(size), dtype=entry.properties.dtype)}
    safe_dcp_load(holder, root, weights_only, planner=DefaultLoadPlanner(
        flatten_state_dict=False, flatten_sharded_tensors=False), no_dist=True)
    return holder[flat]


def place(out: dict[Any, Any], path: tuple[Any, ...], value: Any) -> None:
    """Set ``out[path[0]][path[1]]... = value``, making dicts (lists for int keys)."""
    node: Any = out
    for key, nxt in itertools.pairwise(path):
        if isinstance(node, list):
            while len(node) <= key:
                node.append(None)
            if node[key] is None:
                node[key] = [] if isinstance(nxt, int) else {}
            node = node[key]
        else:
            node = node.setdefault(key, [] if isinstance(nxt, int) else {})
    last = path[-1]
    if isinstance(node, list):
        while len(node) <= last:
            node.append(None)
    node[last] = value


def rank_rng(root: Path, rank: int) -> Any:
    """The entry of ``rng_states_per_rank`` rank ``rank`` saved in a canonical directory
    (``{"rng_states": ..., "epoch_rng": ...}``), or None."""
    file = root / RNG_DIR / f"rank_{rank}.pt"
    if not file.is_file():
        return None
    entry = safety.load_file(file)
    # directories written before per-rank entries hold the bare states
    return {"rng_states": entry} if isinstance(entry, dict) and "torch" in entry else entry


def rank_rngs(root: Path) -> list[Any]:
    """Every rank's entry (:func:`rank_rng`), by rank, up to the first rank without one."""
    entries: list[Any] = []
    while (entry := rank_rng(root, len(entries))) is not None:
        entries.append(entry)
    return entries


def is_directory(path: Any) -> bool:
    from fulmen.checkpoint import remote

    return not remote.is_url(path) and Path(remote.local(path)).is_dir()


def remove_directory(path: Any) -> None:
    import shutil

    from fulmen.checkpoint import remote

    shutil.rmtree(remote.local(path), ignore_errors=True)


def read_directory(path: Any, weights_only: bool = True, template: dict[str, Any] | None = None,
                   rank: int = 0, reader: str = "this strategy", readers: int = 1
                   ) -> dict[str, Any]:
    """A checkpoint directory's content: every rank's random states under
    ``rng_states_per_rank`` (``rng_states``: rank ``rank``'s when it saved some); a directory in a
    plugin's layout (:mod:`fulmen.checkpoint.layouts`) is refused with the command that
    converts it. The files' checksums
    are compared first, split among the ``readers`` processes reading it together (``rank``
    is this one's index among them)."""
    from fulmen.checkpoint import reading, remote

    root = Path(remote.local(path))
    kind = reading.kind_of(root)
    if kind != "dcp":
        raise ConfigurationError(
            f"checkpoint {str(root)!r} is a {kind!r} directory (a layout its strategy's package "
            f"registers, not fulmen's canonical one); {reader} reads fulmen's canonical "
            f"checkpoints. Convert it "
            f"first: fulmen checkpoint convert {str(root)!r} {str(root) + '.ckpt'!r} --to file")
    from fulmen.checkpoint import rng

    content = load_directory(root, template, weights_only, share=(rank, readers))
    if "rng_states" in content:  # every rank's generators, when they saved some
        entries = rank_rngs(root)
        if entries:
            content[rng.KEY] = entries
            if rank < len(entries):
                content["rng_states"] = entries[rank]["rng_states"]
    return content
