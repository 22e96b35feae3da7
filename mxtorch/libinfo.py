"""mx.libinfo: where MXNet's native library, headers and TVM op config are.

mxtorch runs on PyTorch and ships none of them: the search below is MXNet's (its environment
variables MXNET_LIBRARY_PATH / MXNET_INCLUDE_PATH / MXNET_CONF_PATH first, then the places
next to the package), so a real MXNet build named by those variables is found, and otherwise
the same RuntimeError as MXNet's, listing the candidates, is raised.
"""
import logging
import os
import platform

__all__ = ['find_lib_path', 'find_include_path', 'find_conf_path']

__version__ = '1.9.1'     # the MXNet release whose API mxtorch implements (mx.__version__)

_HERE = os.path.dirname(os.path.abspath(os.path.expanduser(__file__)))
_NO_NATIVE = ('\n(mxtorch runs on PyTorch and has no native MXNet library; %s names a '
              'real one)')


def _from_env(variable, exists):
    """The path in `variable` when it names an existing absolute path, else None (a warning
    for a relative or missing one, as MXNet's)."""
    path = os.environ.get(variable)
    if not path:
        return None
    if not exists(path):
        logging.warning("%s '%s' doesn't exist", variable, path)
        return None
    if not os.path.isabs(path):
        logging.warning('%s should be an absolute path, instead of: %s', variable, path)
        return None
    return path


def find_lib_path(prefix='libmxnet'):
    """[path] of the MXNet shared library `prefix` (.so / .dylib / .dll): MXNET_LIBRARY_PATH,
    else the package folder, ../../lib, ../../build (and LD_LIBRARY_PATH's folders first on
    POSIX). RuntimeError listing the candidates when none exists."""
    path = _from_env('MXNET_LIBRARY_PATH', os.path.isfile)
    if path:
        if os.name == 'nt':
            os.environ['PATH'] = os.environ['PATH'] + ';' + os.path.dirname(path)
        return [path]
    folders = [_HERE, os.path.join(_HERE, '../../lib/'), os.path.join(_HERE, '../../build/')]
    if os.name == 'nt':
        config = 'Release'
        folders.append(os.path.join(_HERE, '../../build'))
        folders.append(os.path.join(_HERE, '../../build', config))
        folders.append(os.path.join(_HERE, '../../windows/x64' if
                                    platform.architecture()[0] == '64bit' else '../../windows',
                                    config))
        candidates = [os.path.join(p, prefix + '.dll') for p in folders]
    else:
        if os.name == 'posix' and os.environ.get('LD_LIBRARY_PATH'):
            folders[0:0] = [p.strip() for p in os.environ['LD_LIBRARY_PATH'].split(':')]
        if platform.system() == 'Darwin':
            candidates = ([os.path.join(p, prefix + '.dylib') for p in folders] +
                          [os.path.join(p, prefix + '.so') for p in folders])
        else:
            candidates = [os.path.join(p, prefix + '.so') for p in folders + ['../../../']]
    found = [p for p in candidates if os.path.isfile(p)]
    if not found:
        raise RuntimeError('Cannot find the MXNet library.\nList of candidates:\n' +
                           '\n'.join(candidates) + _NO_NATIVE % 'MXNET_LIBRARY_PATH')
    if os.name == 'nt':
        os.environ['PATH'] = os.environ['PATH'] + ';' + os.path.dirname(found[0])
    return found


def find_include_path():
    """The folder of MXNet's C headers: MXNET_INCLUDE_PATH, else include/ in the package,
    else ../../include/. RuntimeError when neither exists."""
    path = _from_env('MXNET_INCLUDE_PATH', os.path.isdir)
    if path:
        return path
    pip_path = os.path.join(_HERE, 'include/')
    source_path = os.path.join(_HERE, '../../include/')
    for candidate in (pip_path, source_path):
        if os.path.isdir(candidate):
            return candidate
    raise RuntimeError('Cannot find the MXNet include path in either ' + pip_path + ' or ' +
                       source_path + '\n' + _NO_NATIVE.strip('\n') % 'MXNET_INCLUDE_PATH')


def find_conf_path(prefix='tvmop'):
    """[path] of the TVM op config `prefix`.conf (MXNET_CONF_PATH, else ../../lib/ or
    ../../build/); RuntimeError listing the candidates when none exists."""
    path = _from_env('MXNET_CONF_PATH', os.path.isfile)
    if path:
        return path
    candidates = [os.path.join(_HERE, folder) + prefix + '.conf'
                  for folder in ('../../lib/', '../../build/')]
    found = [p for p in candidates if os.path.isfile(p)]
    if not found:
        raise RuntimeError('Cannot find the TVM op config.\nList of candidates:\n' +
                           '\n'.join(candidates))
    return found
