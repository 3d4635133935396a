"""-p: a profile that cannot be written whole (a file size limit) leaves no partial file."""

from __future__ import annotations

PROFILE_UNDER_A_FILE_SIZE_LIMIT = """
import cProfile, resource, signal, sys
from zodbshootout.probes.profiler import write_profile

profile = cProfile.Profile()
profile.enable()
for module in list(sys.modules.values()):
    repr(module)
profile.disable()
# A write beyond 100 bytes fails with EFBIG, as one on a full disk fails with ENOSPC.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
try:
    write_profile(profile, sys.argv[1])
except OSError as e:
    print("failed:", e.strerror)
"""


def test_a_profile_that_cannot_be_written_whole_leaves_no_partial_file(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", PROFILE_UNDER_A_FILE_SIZE_LIMIT, str(tmp_path / "cell-add-w0")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.startswith("failed: File too large"), done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []
