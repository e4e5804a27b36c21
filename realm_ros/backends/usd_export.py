"""Export the twin's compiled MuJoCo model to a USD stage authored for PhysX (Isaac Sim, ovphysx).

One scene, two formats: the MJCF that MuJoCo simulates is built by ``backends/mujoco`` (arm,
gripper, table, task objects, cameras, lights); this module reads the *compiled* ``MjModel``
(not a second hand-written description) and writes the same world as USD with UsdPhysics and
the codeless PhysX schemas (``physx-usd-schemas``):

* **Rigid bodies.** A MuJoCo body with a joint is a PhysX rigid body. Bodies welded to it with
  no joint of their own (``panda_link8``, the gripper housing) become child ``Xform`` prims of
  that rigid body, and their mass is folded into its composite mass, COM and inertia. MuJoCo
  simulates such bodies the same way (one rigid unit); exporting the massless ``panda_link8``
  as a separate PhysX link is what made a naive conversion end with a negative mass.
* **Articulations.** Each world-child whose subtree has hinge or slide joints (the arm, the
  drawer cabinet, the light switch) is a fixed-base articulation: its base is a rigid body
  held by a ``FixedJoint`` carrying ``ArticulationRootAPI``; self-collision is off (the twin's
  robot geoms do not collide with each other either, by contype/conaffinity).
* **Joints.** Revolute/prismatic joints about the local z axis of a joint frame whose z is the
  MuJoCo axis; limits in degrees/m; ``PhysxJointAxisAPI`` carries armature (kg m^2),
  dry friction (``staticFrictionEffort`` = ``dynamicFrictionEffort`` = MuJoCo
  ``frictionloss``, N m) and viscous damping (per degree for angular axes, as USD gains are).
* **Drives.** Arm joints carry the DROID joint-space gains (Kq, Kqd) as drives with the Panda
  effort limit as ``maxForce`` (``backends/physx`` adds the Cartesian terms of the hybrid law
  as joint efforts); the fingers carry the twin's gripper servo (3000 N/m, 30 N s/m, 40 N).
* **Gravity compensation.** Bodies with ``gravcomp="1"`` get ``physxRigidBody:disableGravity``.
* **No mocap body**: the twin's mocap target frame only feeds MuJoCo's site actuators; PhysX
  rejects it and does not need it.
* **Collision shapes**: box, sphere, capsule, cylinder, ellipsoid (scaled sphere), mesh (convex
  hull), plane (a thin box). Friction by physics material (combine mode max, as MuJoCo).
* **Cameras and lights** as ``UsdGeom.Camera`` (same pose convention: look along -z, y up) and
  ``UsdLux`` lights.

:func:`validate_stage` checks the result with stock OpenUSD, the PhysX schemas and the
UsdPhysics parser (masses, inertias, articulation roots, known API schemas).
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re
from typing import Any

import numpy as np

from realm_ros.core import robot
from realm_ros.core.errors import BackendUnavailable, ConfigError

try:
    import mujoco
except ImportError as err:  # pragma: no cover
    raise BackendUnavailable('USD export reads the compiled MuJoCo model: install mujoco') from err

#: MuJoCo joint types.
_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3
#: MuJoCo geom types.
_PLANE, _HFIELD, _SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER, _BOX, _MESH = 0, 1, 2, 3, 4, 5, 6, 7
RAD2DEG = 180.0 / math.pi


def import_pxr() -> Any:
    """Import OpenUSD (``usd-core``) with the PhysX schemas registered; raise if missing."""
    try:
        # Stock OpenUSD (usd-core): register the codeless PhysX schemas before the schema
        # registry is first built. Isaac Sim's USD has them from Kit (and no such package).
        import physx_usd_schemas  # noqa: F401 - registers PhysxSchema on import
    except ImportError:
        pass
    try:
        from pxr import Usd
    except ImportError as err:
        raise BackendUnavailable(
            'USD export needs usd-core and physx-usd-schemas (pip install "realm_ros[physx]")'
        ) from err
    if Usd.SchemaRegistry().FindAppliedAPIPrimDefinition('PhysxSceneAPI') is None:
        raise BackendUnavailable(
            'USD export needs the PhysX schemas: pip install physx-usd-schemas')
    import types

    from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdPhysics, UsdShade
    return types.SimpleNamespace(Gf=Gf, Sdf=Sdf, Usd=Usd, UsdGeom=UsdGeom, UsdLux=UsdLux,
                                 UsdPhysics=UsdPhysics, UsdShade=UsdShade)


@dataclasses.dataclass
class UsdLayout:
    """Where each MuJoCo element went in the USD stage (used by the PhysX and Isaac backends).

    ``joints``: MuJoCo joint name -> joint prim path (hinge/slide joints of articulations).
    ``free_bodies``: MuJoCo body name -> rigid body prim path (free-joint bodies).
    ``articulation_bases``: MuJoCo body name -> base link prim path (one per articulation).
    ``rigid_bodies``: MuJoCo body id -> rigid body prim path (every simulated body).
    ``cameras``: MuJoCo camera name -> ``UsdGeom.Camera`` prim path.
    """

    joints: dict[str, str] = dataclasses.field(default_factory=dict)
    free_bodies: dict[str, str] = dataclasses.field(default_factory=dict)
    articulation_bases: dict[str, str] = dataclasses.field(default_factory=dict)
    rigid_bodies: dict[int, str] = dataclasses.field(default_factory=dict)
    cameras: dict[str, str] = dataclasses.field(default_factory=dict)


def _name(model: Any, kind: Any, index: int, fallback: str) -> str:
    raw = mujoco.mj_id2name(model, kind, index) or f'{fallback}_{index}'
    clean = re.sub(r'[^A-Za-z0-9_]', '_', raw)
    return clean if clean[0].isalpha() or clean[0] == '_' else f'_{clean}'


def _quat_to_mat(quat: np.ndarray) -> np.ndarray:
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=float))
    return mat.reshape(3, 3)


def _mat_to_quat(mat: np.ndarray) -> np.ndarray:
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(mat, dtype=float).reshape(9))
    return quat


def _pose(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = _quat_to_mat(quat)
    t[:3, 3] = pos
    return t


def _z_to(axis: np.ndarray) -> np.ndarray:
    """Return a rotation matrix whose z column is ``axis`` (unit)."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


class _Exporter:
    def __init__(self, model: Any, pxr: Any, physics_hz: float) -> None:
        self.m = model
        self.pxr = pxr
        self.physics_hz = physics_hz
        self.data = mujoco.MjData(model)
        self.data.qpos[:] = model.qpos0
        mujoco.mj_kinematics(model, self.data)
        self.world = [_pose(self.data.xpos[b], self.data.xquat[b]) for b in range(model.nbody)]
        self.layout = UsdLayout()
        self._materials: dict[float, str] = {}
        self._owner = self._owners()

    # -- structure ---------------------------------------------------------------------------

    def _subtree_has_joints(self, body: int) -> bool:
        m = self.m
        for b in range(m.nbody):
            walk = b
            while walk > 0 and walk != body:
                walk = m.body_parentid[walk]
            if walk == body:
                for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
                    if m.jnt_type[j] in (_HINGE, _SLIDE):
                        return True
        return False

    def _owners(self) -> list[int]:
        """Body id -> the rigid body it moves with (0 = static, part of the world)."""
        m = self.m
        owner = [0] * m.nbody
        for b in range(1, m.nbody):
            parent = m.body_parentid[b]
            if m.body_mocapid[b] >= 0:
                owner[b] = -1  # mocap: not exported
            elif m.body_jntnum[b] > 0:
                types = set(m.jnt_type[m.body_jntadr[b]:m.body_jntadr[b] + m.body_jntnum[b]])
                if _BALL in types or (_FREE in types and parent != 0):
                    raise ConfigError(f'USD export: body {m.body(b).name!r} has a joint type '
                                      'this exporter does not map (ball, or a nested free joint)')
                owner[b] = b
            elif parent == 0:
                owner[b] = b if self._subtree_has_joints(b) else 0
            else:
                owner[b] = owner[parent]
        return owner

    # -- authoring helpers ------------------------------------------------------------------

    def _xform(self, path: str, t: np.ndarray) -> Any:
        Gf, UsdGeom = self.pxr.Gf, self.pxr.UsdGeom
        xf = UsdGeom.Xform.Define(self.stage, path)
        q = _mat_to_quat(t[:3, :3])
        xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*t[:3, 3]))
        xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(q[0], *q[1:]))
        return xf

    def _material(self, mu: float) -> str:
        Sdf, UsdPhysics, UsdShade = self.pxr.Sdf, self.pxr.UsdPhysics, self.pxr.UsdShade
        key = round(float(mu), 6)
        if key not in self._materials:
            path = f'/World/PhysicsMaterials/friction_{len(self._materials)}'
            mat = UsdShade.Material.Define(self.stage, path)
            api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
            api.CreateStaticFrictionAttr(key)
            api.CreateDynamicFrictionAttr(key)
            api.CreateRestitutionAttr(0.0)
            prim = mat.GetPrim()
            prim.ApplyAPI('PhysxMaterialAPI')
            prim.CreateAttribute('physxMaterial:frictionCombineMode',
                                 Sdf.ValueTypeNames.Token).Set('max')
            self._materials[key] = path
        return self._materials[key]

    def _geom(self, parent: str, g: int, relative: np.ndarray) -> None:
        pxr, m = self.pxr, self.m
        Gf, UsdGeom, UsdPhysics, UsdShade = pxr.Gf, pxr.UsdGeom, pxr.UsdPhysics, pxr.UsdShade
        name = _name(m, mujoco.mjtObj.mjOBJ_GEOM, g, 'geom')
        t = relative @ _pose(m.geom_pos[g], m.geom_quat[g])
        size = m.geom_size[g]
        gtype = m.geom_type[g]
        path = f'{parent}/{name}'
        scale = None
        if gtype == _BOX:
            prim = UsdGeom.Cube.Define(self.stage, path)
            prim.CreateSizeAttr(2.0)
            scale = size
        elif gtype == _PLANE:
            prim = UsdGeom.Cube.Define(self.stage, path)
            prim.CreateSizeAttr(2.0)
            half = [size[0] or 5.0, size[1] or 5.0, 0.01]
            t = t @ _pose(np.array([0.0, 0.0, -0.01]), np.array([1.0, 0, 0, 0]))
            scale = half
        elif gtype == _SPHERE:
            prim = UsdGeom.Sphere.Define(self.stage, path)
            prim.CreateRadiusAttr(float(size[0]))
        elif gtype == _ELLIPSOID:
            prim = UsdGeom.Sphere.Define(self.stage, path)
            prim.CreateRadiusAttr(1.0)
            scale = size
        elif gtype in (_CAPSULE, _CYLINDER):  # MuJoCo's size: radius, half-length along z
            shape = UsdGeom.Capsule if gtype == _CAPSULE else UsdGeom.Cylinder
            prim = shape.Define(self.stage, path)
            prim.CreateRadiusAttr(float(size[0]))
            prim.CreateHeightAttr(2.0 * float(size[1]))
            prim.CreateAxisAttr('Z')
        elif gtype == _MESH:
            mid = m.geom_dataid[g]
            va, vn = m.mesh_vertadr[mid], m.mesh_vertnum[mid]
            fa, fn = m.mesh_faceadr[mid], m.mesh_facenum[mid]
            prim = UsdGeom.Mesh.Define(self.stage, path)
            prim.CreatePointsAttr([Gf.Vec3f(*map(float, v)) for v in m.mesh_vert[va:va + vn]])
            prim.CreateFaceVertexCountsAttr([3] * fn)
            prim.CreateFaceVertexIndicesAttr(m.mesh_face[fa:fa + fn].reshape(-1).tolist())
        else:
            raise ConfigError(f'USD export: geom {name!r} has type {gtype} (height field), '
                              'which this exporter does not map')
        q = _mat_to_quat(t[:3, :3])
        prim.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*t[:3, 3]))
        prim.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(q[0], *q[1:]))
        if scale is not None:
            prim.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, scale)))
        rgba = m.mat_rgba[m.geom_matid[g]] if m.geom_matid[g] >= 0 else m.geom_rgba[g]
        prim.CreateDisplayColorAttr([Gf.Vec3f(*map(float, rgba[:3]))])
        prim.CreateDisplayOpacityAttr([float(rgba[3])])
        if m.geom_contype[g] or m.geom_conaffinity[g]:
            UsdPhysics.CollisionAPI.Apply(prim.GetPrim())
            if gtype == _MESH:
                UsdPhysics.MeshCollisionAPI.Apply(prim.GetPrim()).CreateApproximationAttr(
                    'convexHull')
            binding = UsdShade.MaterialBindingAPI.Apply(prim.GetPrim())
            binding.Bind(UsdShade.Material.Get(self.stage, self._material(m.geom_friction[g, 0])),
                         UsdShade.Tokens.weakerThanDescendants, 'physics')
        else:
            # Visual only (MuJoCo contype = conaffinity = 0): rendered, never collides.
            prim.CreatePurposeAttr('default')

    def _geoms_of(self, body: int, parent_path: str, relative: np.ndarray) -> None:
        start = self.m.body_geomadr[body]
        for g in range(start, start + self.m.body_geomnum[body]):
            self._geom(parent_path, g, relative)

    def _mass(self, prim: Any, owner: int) -> None:
        """Author the composite mass, COM and principal inertia of ``owner``'s weld group."""
        m, pxr = self.m, self.pxr
        members = [b for b in range(m.nbody) if self._owner[b] == owner]
        inv = np.linalg.inv(self.world[owner])
        total = sum(float(m.body_mass[b]) for b in members)
        if total <= 0:
            raise ConfigError(f'USD export: rigid body {m.body(owner).name!r} has no mass')
        coms, rots = {}, {}
        for b in members:
            t = inv @ self.world[b] @ _pose(m.body_ipos[b], m.body_iquat[b])
            coms[b], rots[b] = t[:3, 3], t[:3, :3]
        com = sum(float(m.body_mass[b]) * coms[b] for b in members) / total
        inertia = np.zeros((3, 3))
        for b in members:
            d = coms[b] - com
            inertia += rots[b] @ np.diag(m.body_inertia[b]) @ rots[b].T
            inertia += float(m.body_mass[b]) * (d @ d * np.eye(3) - np.outer(d, d))
        values, vectors = np.linalg.eigh(inertia)
        if np.linalg.det(vectors) < 0:
            vectors[:, 0] *= -1
        if np.any(values <= 0):
            raise ConfigError(f'USD export: rigid body {m.body(owner).name!r} has a '
                              f'non-positive principal inertia {values.tolist()}')
        q = _mat_to_quat(vectors)
        api = pxr.UsdPhysics.MassAPI.Apply(prim)
        api.CreateMassAttr(total)
        api.CreateCenterOfMassAttr(pxr.Gf.Vec3f(*com))
        api.CreateDiagonalInertiaAttr(pxr.Gf.Vec3f(*values))
        api.CreatePrincipalAxesAttr(pxr.Gf.Quatf(float(q[0]), *map(float, q[1:])))
        massive = [b for b in members if m.body_mass[b] > 0]
        gravcomp = {float(m.body_gravcomp[b]) for b in massive}
        if gravcomp == {1.0}:
            prim.ApplyAPI('PhysxRigidBodyAPI')
            prim.CreateAttribute('physxRigidBody:disableGravity',
                                 pxr.Sdf.ValueTypeNames.Bool).Set(True)
        elif gravcomp != {0.0}:
            raise ConfigError(f'USD export: body {m.body(owner).name!r} mixes gravity '
                              f'compensation values {sorted(gravcomp)}; only 0 or 1 map')

    def _rigid(self, owner: int, path: str) -> None:
        """Author rigid body ``owner`` at ``path`` with its welded members and their geoms."""
        m = self.m
        xf = self._xform(path, self.world[owner])
        self.pxr.UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
        self._mass(xf.GetPrim(), owner)
        self.layout.rigid_bodies[owner] = path
        inv = np.linalg.inv(self.world[owner])
        self._geoms_of(owner, path, np.eye(4))
        for b in range(m.nbody):
            if b != owner and self._owner[b] == owner:
                child = f'{path}/{_name(m, mujoco.mjtObj.mjOBJ_BODY, b, "body")}'
                self._xform(child, inv @ self.world[b])
                self._geoms_of(b, child, np.eye(4))

    def _joint(self, j: int, art_path: str) -> None:
        m, pxr = self.m, self.pxr
        Gf, Sdf, UsdPhysics = pxr.Gf, pxr.Sdf, pxr.UsdPhysics
        body = m.jnt_bodyid[j]
        parent = self._owner[m.body_parentid[body]]
        name = _name(m, mujoco.mjtObj.mjOBJ_JOINT, j, 'joint')
        path = f'{art_path}/joints/{name}'
        angular = m.jnt_type[j] == _HINGE
        joint = (UsdPhysics.RevoluteJoint if angular else UsdPhysics.PrismaticJoint).Define(
            self.stage, path)
        joint.CreateAxisAttr('Z')
        frame_child = _pose(m.jnt_pos[j], _mat_to_quat(_z_to(m.jnt_axis[j])))
        frame_world = self.world[body] @ frame_child
        frame_parent = (frame_world if parent == 0
                        else np.linalg.inv(self.world[parent]) @ frame_world)
        if parent != 0:
            joint.CreateBody0Rel().SetTargets([self.layout.rigid_bodies[parent]])
        joint.CreateBody1Rel().SetTargets([self.layout.rigid_bodies[body]])
        for setter_pos, setter_rot, t in (
                (joint.CreateLocalPos0Attr, joint.CreateLocalRot0Attr, frame_parent),
                (joint.CreateLocalPos1Attr, joint.CreateLocalRot1Attr, frame_child)):
            q = _mat_to_quat(t[:3, :3])
            setter_pos(Gf.Vec3f(*t[:3, 3]))
            setter_rot(Gf.Quatf(float(q[0]), *map(float, q[1:])))
        unit = RAD2DEG if angular else 1.0
        if m.jnt_limited[j]:
            joint.CreateLowerLimitAttr(float(m.jnt_range[j, 0]) * unit)
            joint.CreateUpperLimitAttr(float(m.jnt_range[j, 1]) * unit)
        axis = 'angular' if angular else 'linear'
        dof = m.jnt_dofadr[j]
        prim = joint.GetPrim()
        prim.ApplyAPI('PhysxJointAxisAPI', axis)
        attrs = {
            'armature': float(m.dof_armature[dof]),
            'staticFrictionEffort': float(m.dof_frictionloss[dof]),
            'dynamicFrictionEffort': float(m.dof_frictionloss[dof]),
            # Per unit rate: per deg/s on angular axes (USD's convention for gains).
            'viscousFrictionCoefficient': float(m.dof_damping[dof]) / unit,
        }
        for key, value in attrs.items():
            prim.CreateAttribute(f'physxJointAxis:{axis}:{key}',
                                 Sdf.ValueTypeNames.Float).Set(value)
        drive = self._drive_for(j)
        if drive is not None:
            stiffness, damping, max_force, target = drive
            api = UsdPhysics.DriveAPI.Apply(prim, axis)
            api.CreateTypeAttr('force')
            api.CreateStiffnessAttr(stiffness / unit)
            api.CreateDampingAttr(damping / unit)
            api.CreateMaxForceAttr(max_force)
            api.CreateTargetPositionAttr(target * unit)
            group_damping = sum(float(m.dof_damping[m.jnt_dofadr[k]])
                                for k in self._coupled(j))
            if group_damping > 0 and max_force < 1e6:
                # A force-limited servo against passive damping (the gripper: 40 N, 300 N s/m
                # per finger, one actuator for both fingers in MuJoCo) slews at
                # max_force / total damping. PhysX's viscous joint friction combined with a
                # force-limited drive does not reproduce that (measured: closing 2x too fast
                # or 30 % too slow), so the damping becomes that speed cap instead.
                prim.CreateAttribute(f'physxJointAxis:{axis}:maxJointVelocity',
                                     Sdf.ValueTypeNames.Float).Set(
                                         max_force / group_damping * unit)
                prim.GetAttribute(f'physxJointAxis:{axis}:viscousFrictionCoefficient').Set(0.0)
        self.layout.joints[m.joint(j).name] = path

    def _coupled(self, j: int) -> list[int]:
        """Return ``j`` and the joints tied to it by a MuJoCo joint equality."""
        m = self.m
        out = [j]
        for e in range(m.neq):
            if m.eq_type[e] == mujoco.mjtEq.mjEQ_JOINT and m.eq_obj2id[e] >= 0:
                pair = (int(m.eq_obj1id[e]), int(m.eq_obj2id[e]))
                if j in pair:
                    out.append(pair[1] if pair[0] == j else pair[0])
        return out

    def _drive_for(self, j: int) -> tuple[float, float, float, float] | None:
        """Return (stiffness, damping, max force, target) of the actuator or spring on joint j.

        Affine position servos (``gainprm = kp``, ``biasprm = 0 -kp -kd``) become drives; a
        joint spring (``stiffness``, ``springref``) becomes a drive to the spring's rest.
        """
        m = self.m
        for a in range(m.nu):
            if m.actuator_trntype[a] == 0 and m.actuator_trnid[a, 0] == j:
                kp, kd = float(m.actuator_gainprm[a, 0]), -float(m.actuator_biasprm[a, 2])
                limit = (float(m.actuator_forcerange[a, 1]) if m.actuator_forcelimited[a]
                         else float(m.jnt_actfrcrange[j, 1]) if m.jnt_actfrclimited[j]
                         else 1e6)
                return kp, kd, limit, float(m.qpos0[m.jnt_qposadr[j]])
        for e in range(m.neq):
            # A joint coupled to a driven joint by a linear equality (the right finger follows
            # the left) gets the same drive: PhysX drives each finger to the same target.
            if m.eq_type[e] == mujoco.mjtEq.mjEQ_JOINT and m.eq_obj1id[e] == j and \
                    m.eq_obj2id[e] >= 0 and abs(m.eq_data[e, 1] - 1.0) < 1e-9:
                coupled = self._drive_for(int(m.eq_obj2id[e]))
                if coupled is not None:
                    return coupled
        if m.jnt_stiffness[j] > 0:
            return float(m.jnt_stiffness[j]), 0.0, 1e6, float(m.qpos_spring[m.jnt_qposadr[j]])
        return None

    # -- the stage --------------------------------------------------------------------------

    def build(self, image_size: tuple[int, int]) -> Any:
        pxr, m = self.pxr, self.m
        Gf, Sdf, Usd, UsdGeom, UsdPhysics = pxr.Gf, pxr.Sdf, pxr.Usd, pxr.UsdGeom, pxr.UsdPhysics
        self.stage = Usd.Stage.CreateInMemory()
        UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(self.stage, 1.0)
        UsdPhysics.SetStageKilogramsPerUnit(self.stage, 1.0)
        world = UsdGeom.Xform.Define(self.stage, '/World')
        self.stage.SetDefaultPrim(world.GetPrim())
        scene = UsdPhysics.Scene.Define(self.stage, '/World/PhysicsScene')
        g = float(np.linalg.norm(m.opt.gravity))
        scene.CreateGravityDirectionAttr(Gf.Vec3f(*(m.opt.gravity / g)))
        scene.CreateGravityMagnitudeAttr(g)
        sp = scene.GetPrim()
        sp.ApplyAPI('PhysxSceneAPI')
        sp.CreateAttribute('physxScene:timeStepsPerSecond',
                           Sdf.ValueTypeNames.UInt).Set(int(round(self.physics_hz)))
        sp.CreateAttribute('physxScene:solverType', Sdf.ValueTypeNames.Token).Set('TGS')
        sp.CreateAttribute('physxScene:enableGPUDynamics', Sdf.ValueTypeNames.Bool).Set(False)
        sp.CreateAttribute('physxScene:broadphaseType', Sdf.ValueTypeNames.Token).Set('MBP')
        body_name = lambda b: _name(m, mujoco.mjtObj.mjOBJ_BODY, b, 'body')  # noqa: E731
        # Static world: bodies welded to the world (table, floor, panda_link0's plate ...).
        UsdGeom.Scope.Define(self.stage, '/World/Static')
        self._geoms_of(0, '/World/Static', np.eye(4))
        for b in range(1, m.nbody):
            if self._owner[b] == 0:
                path = f'/World/Static/{body_name(b)}'
                self._xform(path, self.world[b])
                self._geoms_of(b, path, np.eye(4))
        # Free bodies (task objects).
        UsdGeom.Scope.Define(self.stage, '/World/Objects')
        for b in range(1, m.nbody):
            if self._owner[b] == b and m.body_parentid[b] == 0 and m.body_jntnum[b] and \
                    m.jnt_type[m.body_jntadr[b]] == _FREE:
                path = f'/World/Objects/{body_name(b)}'
                self._rigid(b, path)
                self.layout.free_bodies[m.body(b).name] = path
        # Articulations: one per jointed world child.
        for base in range(1, m.nbody):
            if self._owner[base] != base or m.body_parentid[base] != 0 or m.body_jntnum[base]:
                continue
            art = f'/World/{body_name(base)}_articulation'
            UsdGeom.Xform.Define(self.stage, art)
            links = [b for b in range(m.nbody) if self._owner[b] == b and
                     m.body_rootid[b] == base]
            for b in links:
                self._rigid(b, f'{art}/{body_name(b)}')
            fixed = UsdPhysics.FixedJoint.Define(self.stage, f'{art}/joints/root_fixed')
            fixed.CreateBody1Rel().SetTargets([self.layout.rigid_bodies[base]])
            t = self.world[base]
            q = _mat_to_quat(t[:3, :3])
            fixed.CreateLocalPos0Attr(Gf.Vec3f(*t[:3, 3]))
            fixed.CreateLocalRot0Attr(Gf.Quatf(float(q[0]), *map(float, q[1:])))
            root = fixed.GetPrim()
            UsdPhysics.ArticulationRootAPI.Apply(root)
            root.ApplyAPI('PhysxArticulationAPI')
            root.CreateAttribute('physxArticulation:enabledSelfCollisions',
                                 Sdf.ValueTypeNames.Bool).Set(False)
            for j in range(m.njnt):
                if m.body_rootid[m.jnt_bodyid[j]] == base and m.jnt_type[j] in (_HINGE, _SLIDE):
                    self._joint(j, art)
            self.layout.articulation_bases[m.body(base).name] = self.layout.rigid_bodies[base]
        self._cameras(image_size)
        self._lights()
        return self.stage

    def _body_path(self, b: int) -> tuple[str, np.ndarray]:
        """Return the prim a body-attached element lives under and its pose relative to it."""
        owner = self._owner[b]
        if b == 0 or owner <= 0:
            return '/World', self.world[b]
        return self.layout.rigid_bodies[owner], np.linalg.inv(self.world[owner]) @ self.world[b]

    def _cameras(self, image_size: tuple[int, int]) -> None:
        pxr, m = self.pxr, self.m
        width, height = image_size
        for c in range(m.ncam):
            parent, rel = self._body_path(m.cam_bodyid[c])
            name = _name(m, mujoco.mjtObj.mjOBJ_CAMERA, c, 'camera')
            path = f'{parent}/{name}' if parent != '/World' else f'/World/Cameras/{name}'
            t = rel @ _pose(m.cam_pos[c], m.cam_quat[c])
            xf = self._xform(path, t)
            cam = pxr.UsdGeom.Camera(self.stage.DefinePrim(path, 'Camera'))
            del xf
            horizontal = 20.955
            vertical = horizontal * height / width
            fovy = math.radians(float(m.cam_fovy[c]))
            cam.CreateHorizontalApertureAttr(horizontal)
            cam.CreateVerticalApertureAttr(vertical)
            cam.CreateFocalLengthAttr(vertical / (2.0 * math.tan(fovy / 2.0)))
            cam.CreateClippingRangeAttr(pxr.Gf.Vec2f(0.01, 50.0))
            self.layout.cameras[m.camera(c).name] = path

    def _lights(self) -> None:
        pxr, m = self.pxr, self.m
        UsdLux = pxr.UsdLux
        for i in range(m.nlight):
            name = _name(m, mujoco.mjtObj.mjOBJ_LIGHT, i, 'light')
            parent, rel = self._body_path(m.light_bodyid[i])
            direction = rel[:3, :3] @ m.light_dir[i]
            t = rel @ _pose(m.light_pos[i], _mat_to_quat(_z_to(-direction)))
            path = f'/World/Lights/{name}' if parent == '/World' else f'{parent}/{name}'
            self._xform(path, t)
            light = UsdLux.SphereLight(self.stage.DefinePrim(path, 'SphereLight'))
            light.CreateRadiusAttr(0.1)
            light.CreateColorAttr(pxr.Gf.Vec3f(*map(float, m.light_diffuse[i])))
            light.CreateIntensityAttr(30000.0)
        dome = UsdLux.DomeLight.Define(self.stage, '/World/Lights/ambient')
        dome.CreateIntensityAttr(300.0)
        dome.CreateColorAttr(pxr.Gf.Vec3f(*map(float, m.vis.headlight.ambient)))


def export_model(model: Any, physics_hz: float = robot.PHYSICS_HZ,
                 image_size: tuple[int, int] = (320, 180)) -> tuple[Any, UsdLayout]:
    """Return ``(Usd.Stage, UsdLayout)`` for a compiled ``MjModel`` (in memory)."""
    pxr = import_pxr()
    exporter = _Exporter(model, pxr, physics_hz)
    stage = exporter.build(image_size)
    return stage, exporter.layout


def twin_model(task: str = '', physics_hz: float = robot.PHYSICS_HZ) -> Any:
    """Return the compiled twin ``MjModel`` for ``task`` ('' = empty table), as MuJoCo runs it."""
    from realm_ros.backends.mujoco.world import MujocoWorld
    from realm_ros.core.config import WorldConfig

    world = MujocoWorld(WorldConfig(task=task, physics_hz=physics_hz, camera_rate_hz=0))
    try:
        return world.model
    finally:
        world.close()


def export_task(task: str, out: str | pathlib.Path, physics_hz: float = robot.PHYSICS_HZ,
                image_size: tuple[int, int] = (320, 180)) -> UsdLayout:
    """Write the twin's scene for ``task`` to ``out`` (.usda or .usd) and return its layout."""
    stage, layout = export_model(twin_model(task, physics_hz), physics_hz, image_size)
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage.GetRootLayer().Export(str(out))
    return layout


def validate_stage(stage: Any) -> list[str]:
    """Return a list of problems PhysX would trip on (empty = valid).

    Checks: every applied API schema is known to the registry (PhysX schemas registered);
    every rigid body has a positive mass and inertia; the UsdPhysics parser finds the
    articulations and joints; no prim is a MuJoCo mocap target.
    """
    pxr = import_pxr()
    Usd, UsdPhysics = pxr.Usd, pxr.UsdPhysics
    problems = []
    registry = Usd.SchemaRegistry()
    rigid = 0
    for prim in stage.Traverse():
        for schema in prim.GetAppliedSchemas():
            base = schema.split(':')[0]
            if registry.FindAppliedAPIPrimDefinition(base) is None:
                problems.append(f'{prim.GetPath()}: unknown API schema {schema}')
        if 'target_frame' in str(prim.GetPath()):
            problems.append(f'{prim.GetPath()}: mocap target exported')
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            rigid += 1
            mass = UsdPhysics.MassAPI(prim)
            m = mass.GetMassAttr().Get() if prim.HasAPI(UsdPhysics.MassAPI) else None
            inertia = mass.GetDiagonalInertiaAttr().Get() if m is not None else None
            if m is None or m <= 0:
                problems.append(f'{prim.GetPath()}: rigid body without a positive mass ({m})')
            elif inertia is None or min(inertia) <= 0:
                problems.append(f'{prim.GetPath()}: rigid body inertia {inertia} not positive')
    if rigid == 0:
        problems.append('no rigid bodies')
    load = getattr(UsdPhysics, 'UsdPhysicsLoadStageFromPrimRange', None) or \
        UsdPhysics.LoadUsdPhysicsFromRange
    parsed = load(stage, ['/World'])
    kinds = {str(k).split('.')[-1]: len(v[0]) for k, v in parsed.items()}
    if not kinds.get('Articulation'):
        problems.append(f'UsdPhysics parser found no articulation (found {kinds})')
    return problems
