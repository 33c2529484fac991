"""tools/sandboxd-pods' command line for a pod's sandboxd (no cluster): the
container's own flags are kept, its --listen-host and --root-dir give way to
the pod's IP and directory in every spelling sandboxd accepts."""
import importlib.machinery
import importlib.util
import os

from conftest import ROOT


def load_tool():
    path = os.path.join(ROOT, "tools", "sandboxd-pods")
    loader = importlib.machinery.SourceFileLoader("sandboxd_pods", path)
    spec = importlib.util.spec_from_loader("sandboxd_pods", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_listen_host_and_root_dir_are_replaced_in_every_spelling():
    argv = load_tool().sandboxd_argv
    tail = ["--listen-host=127.0.1.7", "--root-dir=/state/p"]
    for args in (["--listen-host=0.0.0.0", "--root-dir=/workspace", "--max-processes=8"],
                 ["--listen-host", "0.0.0.0", "--root-dir", "/workspace", "--max-processes=8"],
                 ["-listen-host", "0.0.0.0", "-root-dir=/workspace", "--max-processes=8"]):
        assert argv("sbxd", args, "127.0.1.7", "/state/p") == \
            ["sbxd", "--max-processes=8", *tail], args
    # a value that looks like a flag of its own is still the replaced flag's
    assert argv("sbxd", ["--root-dir", "--weird", "--max-tasks", "5"], "127.0.1.7",
                "/state/p") == ["sbxd", "--max-tasks", "5", *tail]
    # other flags that merely start alike are kept
    assert argv("sbxd", ["--listen-hostname=x"], "127.0.1.7", "/state/p") == \
        ["sbxd", "--listen-hostname=x", *tail]
    assert argv("sbxd", [], "127.0.1.7", "/state/p") == ["sbxd", *tail]
