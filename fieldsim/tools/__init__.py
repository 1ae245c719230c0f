"""`fs.tools` (Taichi's `ti.tools`), its submodules importable by Taichi's names:

- `image`: `imwrite`, `imread`, `imresize`, `imshow` (and `fs.rgb_to_hex`/`fs.hex_to_rgb`);
- `video`: `VideoManager`;
- `np2ply`: `PLYWriter`;
- `vtk`: `write_vtk` (needs pyevtk);
- `diagnose`: `main()`, what fieldsim runs on (also `python -m fieldsim diagnose`).
"""
from fieldsim.tools import diagnose, image, np2ply, video, vtk
from fieldsim.tools.image import hex_to_rgb, imread, imresize, imshow, imwrite, rgb_to_hex
from fieldsim.tools.np2ply import PLYWriter
from fieldsim.tools.video import VideoManager
from fieldsim.tools.vtk import write_vtk

__all__ = ["PLYWriter", "VideoManager", "diagnose", "hex_to_rgb", "image", "imread", "imresize",
           "imshow", "imwrite", "np2ply", "rgb_to_hex", "video", "vtk", "write_vtk"]
