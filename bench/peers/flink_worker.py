"""Runs inside PyFlink's own virtual environment (started by ``bench/peers/flink.py``): one
TableEnvironment (streaming mode, the JVM started once), then one job per request.

Protocol: JSON lines. The worker answers ``{"ready": true, "version": ...}`` once started; each
request ``{"ddl": [statements], "insert": "INSERT INTO ...", "batch": bool}`` runs the DDL
(untimed), then the INSERT job to its end (bounded input: the final watermark fires every
window), and answers ``{"seconds": s}`` (the job alone) or ``{"error": "..."}``. ``batch`` runs
it in a second TableEnvironment in batch mode (started on first use), whose result of an
updating query is its final table. Logs go to stderr.
"""

import json
import sys
import time


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    parallelism = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    start = time.perf_counter()
    from pyflink.table import EnvironmentSettings, TableEnvironment
    import pyflink

    def environment(settings):
        env = TableEnvironment.create(settings)
        config = env.get_config()
        config.set("parallelism.default", str(parallelism))
        config.set("table.local-time-zone", "UTC")
        return env

    streaming, batch = environment(EnvironmentSettings.in_streaming_mode()), None
    version = getattr(pyflink, "__version__", None)
    if version is None:
        from importlib import metadata
        version = metadata.version("apache-flink")
    reply({"ready": True, "version": version, "start_s": time.perf_counter() - start})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            if request.get("batch") and batch is None:
                batch = environment(EnvironmentSettings.in_batch_mode())
            env = batch if request.get("batch") else streaming
            for statement in request.get("ddl", []):
                env.execute_sql(statement)
            start = time.perf_counter()
            env.execute_sql(request["insert"]).wait()
            reply({"seconds": time.perf_counter() - start})
        except Exception as exc:  # noqa: BLE001 - the parent reports it
            reply({"error": f"{type(exc).__name__}: {exc}"[:4000]})


if __name__ == "__main__":
    main()
