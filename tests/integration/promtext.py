"""Reading a Prometheus text exposition (format 0.0.4) in tests, and the
check of the process_* families that the controller, the router and
sandboxd all expose (libasb's asb_metrics_register_process(), with the names,
help texts and types of client_golang's process collector)."""
import time

# name -> (type, help), as client_golang's process collector writes them
PROCESS_FAMILIES = {
    "process_cpu_seconds_total": ("counter", "Total user and system CPU time spent in seconds."),
    "process_open_fds": ("gauge", "Number of open file descriptors."),
    "process_max_fds": ("gauge", "Maximum number of open file descriptors."),
    "process_virtual_memory_bytes": ("gauge", "Virtual memory size in bytes."),
    "process_virtual_memory_max_bytes": ("gauge", "Maximum amount of virtual memory available in bytes."),
    "process_resident_memory_bytes": ("gauge", "Resident memory size in bytes."),
    "process_start_time_seconds": ("gauge", "Start time of the process since unix epoch in seconds."),
    "process_network_receive_bytes_total": ("counter", "Number of bytes received by the process over the network."),
    "process_network_transmit_bytes_total": ("counter", "Number of bytes sent by the process over the network."),
}


def samples(text):
    """Exposition text -> {'name{labels}': value} (comments skipped)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        out[series] = float(value)
    return out


def families(text):
    """Exposition text -> {family: (type, help)} from its # TYPE and # HELP lines."""
    helps, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            helps[name] = help_text
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            types[name] = kind
    return {name: (kind, helps.get(name)) for name, kind in types.items()}


def check_process_metrics(text, started_after, pid=None):
    """The nine process_* families with client_golang's types and help
    texts, and values that fit a process started after `started_after`
    (seconds since the epoch) that is running now; `pid` (optional): the
    process's soft descriptor limit is read from /proc/<pid>/limits too."""
    fams, s = families(text), samples(text)
    for name, shape in PROCESS_FAMILIES.items():
        assert fams.get(name) == shape, f"{name}: {fams.get(name)} != {shape}"
        assert name in s, f"no sample of {name}"
    # boot time is whole seconds and start ticks hundredths: 1 s of slack each way
    assert started_after - 1.5 <= s["process_start_time_seconds"] <= time.time() + 1.5, \
        (started_after, s["process_start_time_seconds"])
    assert s["process_cpu_seconds_total"] >= 0
    assert s["process_resident_memory_bytes"] > 0
    assert s["process_virtual_memory_bytes"] >= s["process_resident_memory_bytes"]
    assert 3 <= s["process_open_fds"] <= s["process_max_fds"]
    assert s["process_network_receive_bytes_total"] >= 0
    assert s["process_network_transmit_bytes_total"] >= 0
    if pid is not None:
        with open(f"/proc/{pid}/limits") as f:
            soft = next(line.split()[3] for line in f if line.startswith("Max open files"))
        assert s["process_max_fds"] == float(soft)
    return s
