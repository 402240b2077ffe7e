import subprocess
import sys

from metalport.cli import main


def test_version_prints_and_exits_zero(capsys):
    try:
        main(["--version"])
    except SystemExit as exit_:
        assert exit_.code == 0
    assert "metalport 0.1.0" in capsys.readouterr().out


def test_console_module_runs_without_command():
    proc = subprocess.run([sys.executable, "-m", "metalport"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage: metalport" in proc.stdout
