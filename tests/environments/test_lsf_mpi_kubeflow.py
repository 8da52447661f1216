"""LSF, MPI and Kubeflow: detection and reading from environment dictionaries."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import fulmen
from fulmen import ConfigurationError
from fulmen_environments import KubeflowEnvironment, LSFEnvironment, MPIEnvironment


def detect(environ: dict[str, str]) -> str | None:
    return fulmen.get_plugin_manager().first_result("fulmen_detect_environment",
                                                    environ=environ)[0]


@pytest.fixture
def lsf(tmp_path):
    rankfile = tmp_path / "ranks"
    rankfile.write_text("launch\nhostA\nhostA\nhostB\nhostB\n")
    return {"LSB_JOBID": "4321", "LSB_DJOB_RANKFILE": str(rankfile), "JSM_NAMESPACE_SIZE": "4",
            "JSM_NAMESPACE_RANK": "2", "JSM_NAMESPACE_LOCAL_RANK": "0"}


def test_lsf(fake_dists, lsf):
    assert detect(lsf) == "lsf"
    env = LSFEnvironment(lsf)
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (4, 2, 0,
                                                                                         1)
    assert (env.main_address, env.main_port) == ("hostA", 10321)
    env.validate_settings(num_devices=2, num_nodes=2)
    with pytest.raises(ConfigurationError, match=r"runs 4 processes on 2 hosts, but .* "
                       r"devices=4 x num_nodes=1"):
        env.validate_settings(num_devices=4, num_nodes=1)


def test_lsf_rank_file_problems(tmp_path, lsf):
    with pytest.raises(ConfigurationError, match=r"LSB_DJOB_RANKFILE='/nonexistent' cannot be "
                       r"read"):
        _ = LSFEnvironment({**lsf, "LSB_DJOB_RANKFILE": "/nonexistent"}).main_address
    (tmp_path / "short").write_text("launch\n")
    with pytest.raises(ConfigurationError, match=r"lists 1 host\(s\); expected the launch node"):
        _ = LSFEnvironment({**lsf, "LSB_DJOB_RANKFILE": str(tmp_path / "short")}).hosts


@pytest.mark.parametrize("environ", [
    {"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
     "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
    {"PMI_SIZE": "4", "PMI_RANK": "3", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
    {"MV2_COMM_WORLD_SIZE": "4", "MV2_COMM_WORLD_RANK": "3", "MV2_COMM_WORLD_LOCAL_RANK": "1",
     "MV2_COMM_WORLD_LOCAL_SIZE": "2"},
])
def test_mpi_implementations(fake_dists, environ):
    assert detect(environ) == "mpi"
    env = MPIEnvironment({**environ, "MASTER_ADDR": "n0", "MASTER_PORT": "2000"})
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (4, 3, 1,
                                                                                         1)
    assert (env.main_address, env.main_port) == ("n0", 2000)
    env.validate_settings(num_devices=2, num_nodes=2)


def test_mpi_without_mpi4py_or_master_addr_says_what_to_install(python_without):
    """In an environment without mpi4py (made here whether or not it is installed)."""
    code = textwrap.dedent("""
        from fulmen import ConfigurationError
        from fulmen_environments import MPIEnvironment
        try:
            MPIEnvironment({"OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "0"}).main_address
        except ConfigurationError as exc:
            print(exc)
        """)
    done = subprocess.run(python_without("mpi4py"), input=code, text=True, capture_output=True,
                          timeout=60)
    assert "pip install 'fulmen-environments[mpi]'" in done.stdout, done.stderr


def test_mpi4py_is_not_imported_by_detection():
    """Detection and listing under mpirun's variables leave mpi4py alone (a fresh process: the
    test session may have imported it elsewhere)."""
    code = textwrap.dedent("""
        import sys
        import fulmen
        name, _ = fulmen.get_plugin_manager().first_result(
            "fulmen_detect_environment",
            environ={"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"})
        fulmen.get_plugin_manager().catalog
        print(name, "mpi4py" in sys.modules)
        """)
    done = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True,
                          timeout=60)
    assert done.stdout.split() == ["mpi", "False"], done.stderr


def test_kubeflow_is_only_selected_by_name(fake_dists, monkeypatch):
    environ = {"MASTER_ADDR": "pod-0", "MASTER_PORT": "23456", "WORLD_SIZE": "1", "RANK": "0"}
    assert detect(environ) == "local"
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    trainer = fulmen.Trainer(accelerator="cpu", plugins=["kubeflow"])
    assert trainer.cluster_environment.name == "kubeflow"
    env = KubeflowEnvironment({**environ, "WORLD_SIZE": "3", "RANK": "2"})
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (3, 2, 0,
                                                                                         2)
    with pytest.raises(ConfigurationError, match=r"3 replicas \(WORLD_SIZE\), but num_nodes=1"):
        env.validate_settings(1, 1)
