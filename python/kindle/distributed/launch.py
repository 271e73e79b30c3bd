"""python -m kindle.distributed.launch: the older launcher's name; the same as kindle.distributed.run
(LOCAL_RANK is in the environment; --use-env is accepted and implied)."""
import sys

from .run import get_args_parser, run


def main(argv=None):
    argv = [a for a in (sys.argv[1:] if argv is None else argv) if a not in ("--use-env", "--use_env")]
    sys.exit(run(get_args_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
