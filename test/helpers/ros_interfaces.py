"""Generate and compile Python types for franka_msgs, control_msgs, controller_manager_msgs.

These packages are not on PyPI; their definitions (``test/helpers/interfaces``) are. rosidl's
generators and the ROS wheels' headers and libraries are in the venv, so the types a lab's
franka_ros2 uses are built here with gcc/g++ the way ``rosidl_generate_interfaces`` would: C
structs, the C, introspection and Fast-DDS type supports, and the Python extension. The result is
cached under ``$REALM_ROS_INTERFACE_CACHE`` (default ``~/.cache/realm_ros/ros_interfaces``), keyed
by the definitions, so a test session pays the minute of compiling once.

Usage in tests: ``ros_interfaces.activate()`` (builds if needed, then puts the packages on
``sys.path``/``PYTHONPATH`` and ``LD_LIBRARY_PATH`` for this process and its children).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
DEFINITIONS = HERE / 'interfaces'
#: package -> packages its definitions use (their headers and libraries come with the wheels).
PACKAGES = {
    'control_msgs': ('builtin_interfaces', 'action_msgs', 'unique_identifier_msgs',
                     'service_msgs'),
    'franka_msgs': ('builtin_interfaces', 'action_msgs', 'unique_identifier_msgs',
                    'service_msgs', 'std_msgs', 'sensor_msgs', 'geometry_msgs'),
    'controller_manager_msgs': ('builtin_interfaces', 'lifecycle_msgs', 'service_msgs'),
}
VENV = pathlib.Path(sys.prefix)
#: Bump when the build recipe changes (part of the cache key).
RECIPE = '2'


def _key() -> str:
    digest = hashlib.sha256((sys.version + RECIPE).encode())
    for path in sorted(DEFINITIONS.rglob('*')):
        if path.suffix in ('.msg', '.srv', '.action'):
            digest.update(str(path.relative_to(DEFINITIONS)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> pathlib.Path:
    """Return where the built packages live."""
    root = os.environ.get('REALM_ROS_INTERFACE_CACHE',
                          str(pathlib.Path.home() / '.cache' / 'realm_ros' / 'ros_interfaces'))
    return pathlib.Path(root) / _key()


def _generate(package: str, work: pathlib.Path) -> None:
    """Run rosidl's generators for ``package`` (in a child process: it patches rosidl)."""
    subprocess.run([sys.executable, __file__, 'generate', package, str(work)], check=True,
                   env={**os.environ, 'AMENT_PREFIX_PATH': str(VENV)})


def _compile(package: str, deps: tuple[str, ...], work: pathlib.Path,
             out: pathlib.Path) -> None:
    gen = work / 'gen' / package
    inc = work / 'inc'
    for kind, sub in (('c', 'c'), ('intro', 'introspection_c'), ('fast', 'fastrtps_c')):
        (inc / kind).mkdir(parents=True, exist_ok=True)
        (inc / kind / package).symlink_to(gen / sub)
    lib, py = out / 'lib', out / 'python' / package
    lib.mkdir(parents=True, exist_ok=True)
    py.mkdir(parents=True, exist_ok=True)
    includes = [f'-I{VENV / "include"}', f'-I{inc / "c"}', f'-I{inc / "intro"}',
                f'-I{inc / "fast"}', f'-I{sysconfig.get_paths()["include"]}']
    includes += [f'-I{d}' for d in sorted((VENV / 'include').iterdir()) if d.is_dir()]
    try:
        import numpy
        includes.append(f'-I{numpy.get_include()}')
    except ImportError:  # pragma: no cover - numpy is a dependency of realm_ros
        pass
    # $ORIGIN: the folder is built under a temporary name and renamed when complete.
    link = [f'-L{VENV / "lib"}', f'-L{lib}', f'-Wl,-rpath,{VENV / "lib"}',
            '-Wl,-rpath,$ORIGIN', '-Wl,-rpath,$ORIGIN/../../lib']
    dep_c = [f'-l{d}__{s}' for d in deps for s in (
        'rosidl_generator_c', 'rosidl_typesupport_c', 'rosidl_typesupport_introspection_c')]
    dep_fast = [f'-l{d}__rosidl_typesupport_fastrtps_c' for d in deps]
    dep_py = [f'-l{d}__rosidl_generator_py' for d in deps]
    own = f'-l{package}__rosidl_generator_c'

    def build(compiler: str, sources: list[pathlib.Path], target: pathlib.Path,
              libs: list[str]) -> None:
        extra = ['-std=c++17'] if compiler == 'g++' else []
        # A soname lets an in-process preload satisfy rosidl's dlopen by bare library name.
        extra.append(f'-Wl,-soname,{target.name}')
        subprocess.run([compiler, '-shared', '-fPIC', '-O1', '-w', *extra, *includes,
                        *map(str, sources), '-o', str(target), *link, *libs], check=True)

    build('gcc', sorted((gen / 'c').rglob('*.c')),
          lib / f'lib{package}__rosidl_generator_c.so',
          [*dep_c, '-lrosidl_runtime_c', '-lrcutils'])
    build('gcc', sorted((gen / 'introspection_c').rglob('*.c')),
          lib / f'lib{package}__rosidl_typesupport_introspection_c.so',
          [own, *dep_c, '-lrosidl_runtime_c', '-lrosidl_typesupport_introspection_c'])
    build('g++', sorted((gen / 'fastrtps_c').rglob('*.cpp')),
          lib / f'lib{package}__rosidl_typesupport_fastrtps_c.so',
          [own, *dep_c, *dep_fast, '-lrosidl_runtime_c', '-lrosidl_typesupport_fastrtps_c',
           '-lrosidl_typesupport_fastrtps_cpp', '-lfastcdr', '-lrmw', '-lrcutils'])
    build('g++', sorted((gen / 'c').rglob('*.cpp')),
          lib / f'lib{package}__rosidl_typesupport_c.so',
          [own, '-lrosidl_runtime_c', '-lrosidl_typesupport_c', *dep_c, '-lrcutils',
           '-lrcpputils'])
    build('gcc', sorted((gen / 'py').rglob('_*_s.c')),
          lib / f'lib{package}__rosidl_generator_py.so',
          [own, *dep_c, *dep_py, '-lrosidl_runtime_c', '-lrcutils'])
    for support in ('rosidl_typesupport_c', 'rosidl_typesupport_fastrtps_c',
                    'rosidl_typesupport_introspection_c'):
        build('gcc', [gen / 'py' / f'_{package}_s.ep.{support}.c'],
              py / f'{package}_s__{support}.so',
              [f'-l{package}__rosidl_generator_py', own, f'-l{package}__{support}',
               '-lrosidl_runtime_c', '-lrcutils'])
    for path in (gen / 'py').rglob('*.py'):
        target = py / path.relative_to(gen / 'py')
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    (py / '__init__.py').touch()


def build() -> pathlib.Path:
    """Build every package into :func:`cache_dir` unless it is there; return that folder."""
    target = cache_dir()
    if (target / 'done').exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix='build-', dir=target.parent))
    with tempfile.TemporaryDirectory() as tmp:
        for package, deps in PACKAGES.items():
            work = pathlib.Path(tmp) / package
            _generate(package, work)
            _compile(package, deps, work, staging)
    (staging / 'done').touch()
    try:
        staging.rename(target)
    except OSError:  # built by another process meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return target


def activate() -> pathlib.Path:
    """Build if needed; make the packages importable here and in child processes.

    Child processes find the type-support libraries through ``LD_LIBRARY_PATH``; this process
    started before it was set, so they are preloaded (by soname) for rosidl's ``dlopen``.
    """
    import ctypes

    root = build()
    for package in PACKAGES:
        for support in ('rosidl_generator_c', 'rosidl_typesupport_introspection_c',
                        'rosidl_typesupport_fastrtps_c', 'rosidl_typesupport_c',
                        'rosidl_generator_py'):
            ctypes.CDLL(str(root / 'lib' / f'lib{package}__{support}.so'),
                        mode=ctypes.RTLD_GLOBAL)
    python, lib = str(root / 'python'), str(root / 'lib')
    if python not in sys.path:
        sys.path.insert(0, python)
    for var, value in (('PYTHONPATH', python), ('LD_LIBRARY_PATH', lib)):
        parts = [p for p in os.environ.get(var, '').split(os.pathsep) if p]
        if value not in parts:
            os.environ[var] = os.pathsep.join([value, *parts])
    return root


def _generate_main(package: str, work: str) -> None:
    """Child process: translate .msg/.srv/.action to IDL, hash them, run the generators."""
    import importlib.metadata as metadata

    from rosidl_adapter.action import convert_action_to_idl
    from rosidl_adapter.msg import convert_msg_to_idl
    from rosidl_adapter.srv import convert_srv_to_idl
    import rosidl_cli.command.helpers as helpers
    import rosidl_cli.entry_points as entry_points

    # The wheels register each generator twice (dist-info and egg-info): keep one.
    original = metadata.entry_points

    class _Unique:
        def __init__(self, points):
            self._points = points

        def select(self, **kwargs):
            seen, out = set(), []
            for point in self._points.select(**kwargs):
                if (point.name, point.value) not in seen:
                    seen.add((point.name, point.value))
                    out.append(point)
            return out

    entry_points.importlib_metadata.entry_points = lambda: _Unique(original())

    # rosidl_cli matches type-description files to IDL files by file stem alone, which
    # confuses msg/GripperCommand with action/GripperCommand: match on folder and stem.
    def tuples(idl_files, description_files):
        out = []
        for idl in idl_files:
            _, path = helpers.interface_path_as_tuple(idl)
            key = (pathlib.Path(path).parent.name, pathlib.Path(path).stem)
            match = [d for d in description_files
                     if (pathlib.Path(d).parent.name, pathlib.Path(d).stem) == key]
            out.append(f'{path}:{match[0]}')
        return out

    import importlib
    helpers.build_type_description_tuples = tuples
    for module in ('rosidl_generator_c.cli', 'rosidl_generator_py.cli',
                   'rosidl_typesupport_c.cli', 'rosidl_typesupport_introspection_c.cli',
                   'rosidl_typesupport_fastrtps_c.cli'):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, 'build_type_description_tuples'):
            mod.build_type_description_tuples = tuples
    from rosidl_cli.command.generate.api import generate
    from rosidl_cli.command.hash.api import generate_type_hashes

    source = DEFINITIONS / package
    idl_root = pathlib.Path(work) / 'idl'
    converters = {'.msg': convert_msg_to_idl, '.srv': convert_srv_to_idl,
                  '.action': convert_action_to_idl}
    idl = []
    for path in sorted(source.rglob('*')):
        if path.suffix not in converters:
            continue
        relative = path.relative_to(source)
        converters[path.suffix](source, package, relative,
                                idl_root / package / relative.parent)
        idl.append(f'{idl_root / package}:{relative.with_suffix(".idl")}')
    includes = [str(VENV / 'share'), str(idl_root)]
    hashes = generate_type_hashes(package_name=package, interface_files=idl,
                                  include_paths=includes,
                                  output_path=pathlib.Path(work) / 'td' / package)
    generate(package_name=package, interface_files=idl, include_paths=includes,
             output_path=pathlib.Path(work) / 'gen' / package, types=['c', 'py'],
             typesupports=['c', 'introspection_c', 'fastrtps_c'],
             type_description_files=hashes)


if __name__ == '__main__':
    if sys.argv[1:2] == ['generate']:
        _generate_main(sys.argv[2], sys.argv[3])
    else:
        print(build())
