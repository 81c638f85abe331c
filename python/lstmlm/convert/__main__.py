"""python3 -m lstmlm.convert SOURCE OUTDIR [options]: the converter command line (cli.main; docs/importing.md)."""
import sys

try:
    from .cli import main
    status = main()
except KeyboardInterrupt:  # during argument parsing or the imports too: quiet, the shell's status for SIGINT
    status = 130
sys.exit(status)
