"""mx.kvstore.kvstore_server: MXNet's parameter-server process.

mxtorch's distributed kvstore ('dist_sync', 'dist_device_sync', 'dist_async') has no server or
scheduler processes: the workers all-reduce over torch.distributed. A KVStoreServer still
answers its controller's commands (a pickled optimizer set on its store), but running it as a
server process raises the MXNetError that a DMLC_ROLE=server/scheduler launch gets.
"""
import logging
import pickle

from ..base import MXNetError
from .base import create  # noqa: F401  (MXNet's module imports it; scripts may too)

__all__ = ['KVStoreServer']

_NO_SERVERS = ("mxtorch runs no parameter servers or scheduler (the workers all-reduce over "
               "torch.distributed); launch only the workers, with DMLC_ROLE=worker")


class KVStoreServer:
    """The server side of `kvstore` (MXNet's parameter server)."""

    def __init__(self, kvstore):
        self.kvstore = kvstore
        self.handle = getattr(kvstore, 'handle', kvstore)
        self.init_logginig = False          # MXNet's spelling

    def _controller(self):
        """The command handler: command 0 sets the pickled optimizer on the store; other
        commands are reported and ignored."""
        def server_controller(cmd_id, cmd_body, _):
            if not self.init_logginig:
                head = '%(asctime)-15s Server[' + str(self.kvstore.rank) + '] %(message)s'
                logging.basicConfig(level=logging.DEBUG, format=head)
                self.init_logginig = True
            if cmd_id == 0:
                self.kvstore.set_optimizer(pickle.loads(cmd_body))
            else:
                print('server %d, unknown command (%d, %s)' % (self.kvstore.rank, cmd_id,
                                                             cmd_body))
        return server_controller

    def run(self):
        """Serve the store until the job ends: not provided (see the module's docstring)."""
        raise MXNetError('KVStoreServer.run: ' + _NO_SERVERS)
