"""kubeconfig.py - the current context of a kubeconfig, for the Python tools
and benchmarks that talk to the API server without kubectl
(tools/sandboxd-pods, bench/create_to_ready.py and the benchmarks on it).

Reads the file the way kubectl does for what these need: the current
context's server, CA, client certificate and key (files, relative to the
kubeconfig, or embedded `*-data`, written to `secrets_dir` with mode 0600),
bearer token or token file, insecure-skip-tls-verify. Not a full client:
no exec plugins, no merging of several files.
"""
import base64
import os

import yaml


class KubeconfigError(Exception):
    """The file is missing, not YAML, or lacks the current context's parts."""


class Context:
    """The current context: `server`, `ca`, `cert`, `key` (file paths or
    None), `token` (or None), `insecure` (bool)."""

    def __init__(self, path, secrets_dir):
        try:
            with open(path) as f:
                cfg = yaml.safe_load(f)
            ctx = next(c["context"] for c in cfg["contexts"]
                       if c["name"] == cfg["current-context"])
            cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
            user = next((u["user"] for u in cfg.get("users") or []
                         if u["name"] == ctx.get("user")), {})
            self.server = cluster["server"].rstrip("/")
        except (OSError, yaml.YAMLError, KeyError, TypeError, StopIteration) as e:
            raise KubeconfigError(f"cannot use kubeconfig {path}: {type(e).__name__}: {e}") from e
        base = os.path.dirname(os.path.abspath(path))

        def material(section, key, name):
            """A file holding section[key-data] or named by section[key], or None."""
            if section.get(key + "-data"):
                out = os.path.join(secrets_dir, name)
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(base64.b64decode(section[key + "-data"]))
                return out
            return os.path.join(base, section[key]) if section.get(key) else None

        self.ca = material(cluster, "certificate-authority", "ca.crt")
        self.insecure = bool(cluster.get("insecure-skip-tls-verify"))
        self.cert = material(user, "client-certificate", "client.crt")
        self.key = material(user, "client-key", "client.key")
        self.token = user.get("token")
        if not self.token and user.get("tokenFile"):
            with open(os.path.join(base, user["tokenFile"])) as f:
                self.token = f.read().strip()
