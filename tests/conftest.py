import importlib
import importlib.util

pytest_plugins = ["tests.support.fixtures", "pytester"]

# httpx and the openai SDK import their HTTP cores on first use, and httpx caches their
# exception classes then. An in-process pytester run drops every module first imported
# inside it, so a later test would get a second copy whose exceptions nothing maps
# (httpcore.ConnectError escaping instead of httpx.ConnectError). Imported here, they
# are in the snapshot pytester restores, whatever order the tests run in.
for _name in (
    "h11",
    "httpcore",
    "httpcore._backends.sync",
    "httpcore._backends.anyio",
    "httpcore2",
    "httpcore2._backends.sync",
    "httpcore2._backends.anyio",
    "anyio._backends._asyncio",
):
    if importlib.util.find_spec(_name.split(".")[0]) is not None:
        importlib.import_module(_name)
