"""Names `vulture --min-confidence 80` reports as unused in fieldsim but that must stay.

Vulture's whitelist mechanism: this file is passed to vulture next to the package
(`python -m vulture fieldsim tests/vulture_whitelist.py --min-confidence 80`, as
tests/test_lint.py does), and each name used here counts as used wherever it is defined. It is
never imported. Add a name only for a parameter the caller's protocol or Taichi's API dictates,
under a comment saying which; remove dead code instead of listing it.
"""
# ruff: noqa: F821, B018 - bare (undefined) names are how a vulture whitelist marks names used

# The context-manager protocol passes __exit__ the exception (type, value, traceback) whether or
# not it is looked at: fieldsim/ad/check.py, ad/checkpoint.py, ad/fwd_mode.py, ad/tape.py, gui.py
exc

# Taichi's GUI API: get_events(*filters) / get_event(*filters) take event filters; fieldsim's
# GUI has no event loop, so they are accepted and there is nothing to filter (fieldsim/gui.py)
filters

# Taichi's ndarray type API: fs.types.ndarray(..., boundary=...) is accepted for compatibility
# and not used (fieldsim/lang/ndarray.py, NdarrayType)
boundary

# Taichi's ti.tools.VideoManager(automatic_build=True) builds the video at frames 4, 8, 16, ...;
# fieldsim accepts it and builds only on make_video() (documented there, fieldsim/tools/video.py)
automatic_build

# Taichi's GGUI API (fieldsim/ui/): Window(vsync, show_window, fps_limit), Camera.track_user_inputs
# (movement_speed, yaw_speed, pitch_speed, hold_key) and Scene.mesh(show_wireframe) are accepted and
# have no effect offscreen (no screen, no input, triangles always filled)
vsync
show_window
fps_limit
movement_speed
yaw_speed
pitch_speed
hold_key
show_wireframe
# Taichi's FieldsBuilder.finalize(raise_warning=True) warns about an empty builder; fieldsim's
# accepts the flag (fieldsim/lang/snode.py)
raise_warning
