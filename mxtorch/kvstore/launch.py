"""`mxtorch launch`: start a distributed job with torch.distributed's launcher (torchrun).

    mxtorch launch -n N [--hosts FILE [--node-rank I] [--port P]] [--timeout S]
                   [--max-restarts K] script.py [script args...]

One machine: `torchrun --standalone --nproc_per_node N -m mxtorch.compat script.py ...`: every
worker runs the script as `mxtorch run` would, so `import mxnet` gives mxtorch there too.

Several machines (`--hosts FILE`: one host name per line, blank lines and # comments ignored):
N workers are spread evenly, N/H per host, and host i runs

    torchrun --nnodes H --node_rank i --nproc_per_node N/H
             --master_addr <first host> --master_port P -m mxtorch.compat script.py ...

so worker ranks are host-major (host i holds ranks i*N/H ... (i+1)*N/H - 1) and rank 0, which
writes the checkpoints, is on the first host. By default every host's command is started over
`ssh HOST 'cd <this directory> && ...'` (the same directory and Python on every host, as MXNet's
ssh launcher assumed); with `--node-rank I` only host I's command runs, here - for clusters whose
scheduler starts one command per machine.

`--timeout S` sets MXTORCH_DIST_TIMEOUT for the workers (how long they wait for a missing or
stuck worker before failing; cluster.py) and the rendezvous timeout of the multi-host launch.
`--max-restarts K` lets torchrun restart the workers after a failure; a script that resumes from
`mx.kv.latest_checkpoint(prefix)` then continues from its last checkpoint.

When the job fails on this machine, the launcher ends with a report naming the rank that died
(its exit status or signal) or hung (frozen, or alive but not reaching a collective within the
timeout), as the workers found it (supervise.py).
"""
import argparse
import os
import shlex
import subprocess
import sys


def _add_arguments(parser):
    parser.add_argument('-n', '--num-workers', type=int, required=True,
                        help='total number of worker processes')
    parser.add_argument('--hosts', metavar='FILE',
                        help='file listing the hosts, one per line (default: this machine)')
    parser.add_argument('--node-rank', type=int,
                        help='with --hosts: run only this host\'s part, here, instead of ssh')
    parser.add_argument('--port', type=int, default=29500,
                        help='with --hosts: rendezvous port on the first host (%(default)s)')
    parser.add_argument('--timeout', type=float,
                        help='seconds before a missing or stuck worker fails the job '
                             '(MXTORCH_DIST_TIMEOUT; default 120)')
    parser.add_argument('--max-restarts', type=int, default=0,
                        help='times torchrun restarts the workers after a failure')
    parser.add_argument('script', help='the training script')
    parser.add_argument('script_args', nargs=argparse.REMAINDER,
                        help='arguments of the script')
    parser.set_defaults(run=run)


def build_parser():
    parser = argparse.ArgumentParser(prog='mxtorch launch', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return parser


def register_cli(subparsers):
    """Add the `launch` subcommand to the `mxtorch` command's subparsers."""
    parser = subparsers.add_parser('launch', help='run a script as a distributed job (torchrun)',
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)


def read_hosts(path):
    with open(path) as f:
        hosts = [line.split('#')[0].strip() for line in f]
    hosts = [h for h in hosts if h]
    if not hosts:
        raise ValueError('the hosts file %s lists no host' % path)
    return hosts


def node_commands(args):
    """[(host, torchrun argv)], one per host; host None for this machine alone."""
    if args.num_workers < 1:
        raise ValueError('-n must be >= 1, got %d' % args.num_workers)
    if args.timeout is not None and not args.timeout > 0:
        raise ValueError('--timeout must be a number of seconds > 0, got %g' % args.timeout)
    if args.max_restarts < 0:
        raise ValueError('--max-restarts must be >= 0, got %d' % args.max_restarts)
    if args.hosts is None and not os.path.isfile(args.script):
        raise ValueError("can't open file %r: no such file" % args.script)
    torchrun = [sys.executable, '-m', 'torch.distributed.run',
                '--max_restarts', str(args.max_restarts)]
    # each worker runs `python -m mxtorch.compat script ...`, so an unmodified MXNet script's
    # `import mxnet` resolves to mxtorch in every worker, as under `mxtorch run`
    script = ['-m', 'mxtorch.compat', args.script] + list(args.script_args)
    if args.hosts is None:
        return [(None, torchrun + ['--standalone', '--nnodes', '1', '--nproc_per_node',
                                   str(args.num_workers)] + script)]
    hosts = read_hosts(args.hosts)
    if args.num_workers % len(hosts):
        raise ValueError('-n %d workers cannot be spread evenly over the %d hosts of %s'
                         % (args.num_workers, len(hosts), args.hosts))
    rendezvous = ['--nnodes', str(len(hosts)), '--nproc_per_node',
                  str(args.num_workers // len(hosts)), '--master_addr', hosts[0],
                  '--master_port', str(args.port)]
    if args.timeout is not None:
        rendezvous += ['--rdzv_conf', 'timeout=%d' % max(1, round(args.timeout))]
    return [(host, torchrun + rendezvous[:2] + ['--node_rank', str(i)] + rendezvous[2:] + script)
            for i, host in enumerate(hosts)]


def launch(args):
    """Run the job; the exit status (0 when every part succeeded)."""
    commands = node_commands(args)
    env = dict(os.environ)
    if args.timeout is not None:
        env['MXTORCH_DIST_TIMEOUT'] = '%g' % args.timeout
    if args.hosts is None:
        return _here(commands[0][1], env, args.timeout)
    if args.node_rank is not None:
        if not 0 <= args.node_rank < len(commands):
            raise ValueError('--node-rank must be in [0, %d), got %d'
                             % (len(commands), args.node_rank))
        return _here(commands[args.node_rank][1], env, args.timeout)
    prefix = 'cd %s && ' % shlex.quote(os.getcwd())
    if args.timeout is not None:
        prefix += 'MXTORCH_DIST_TIMEOUT=%g ' % args.timeout
    procs = [subprocess.Popen(['ssh', '-o', 'BatchMode=yes', host,
                               prefix + ' '.join(shlex.quote(a) for a in argv)])
             for host, argv in commands]
    codes = [p.wait() for p in procs]
    return next((c for c in codes if c), 0)


def _here(argv, env, timeout):
    """Run torchrun's agent in this process (argv: the torchrun command), watched."""
    from .cluster import timeout_seconds
    from .supervise import run_agent
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return run_agent(argv[3:], timeout if timeout is not None else timeout_seconds())
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run(args):
    """The `mxtorch launch` command: exits with the job's status when it failed."""
    try:
        code = launch(args)
    except ValueError as err:
        sys.exit('mxtorch launch: %s' % err)
    if code:
        sys.exit(code)


def main(argv=None):
    """`python -m mxtorch.kvstore.launch ...`: 0, or SystemExit with the job's failure status."""
    run(build_parser().parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
