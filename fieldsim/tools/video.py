"""`fs.tools.video` (Taichi's `ti.tools.video`): `VideoManager` collects frames as PNGs and
builds a GIF (Pillow) and, where an `ffmpeg` executable is on PATH, an MP4; without ffmpeg,
asking for an MP4 warns and writes the GIF only. Frames are images as `fs.tools.imwrite` takes
them ((x, y[, c]), origin bottom-left).
"""
from __future__ import annotations

import os

from fieldsim.tools.image import imwrite, to_uint8

__all__ = ["VideoManager"]


class VideoManager:
    """Taichi's `ti.tools.VideoManager`: `write_frame(img)` per frame, then `make_video()`.

    Frames go to `<output_dir>/frames/0000000.png`, ...; videos to
    `<output_dir>/<video_filename>.gif` / `.mp4`. `automatic_build` is accepted and ignored:
    call `make_video()`.
    """

    def __init__(self, output_dir, video_filename="video", width=None, height=None,
                 post_processor=None, framerate=24, automatic_build=True):
        self.output_dir = os.fspath(output_dir)
        self.video_filename = video_filename
        self.width, self.height = width, height
        self.post_processor = post_processor
        self.framerate = framerate
        self.frame_counter = 0
        self.frame_directory = os.path.join(self.output_dir, "frames")
        os.makedirs(self.frame_directory, exist_ok=True)

    def get_output_filename(self, suffix):
        return os.path.join(self.output_dir, self.video_filename + suffix)

    def write_frame(self, img):
        img = to_uint8(img)
        if self.post_processor is not None:
            img = self.post_processor.process(img)
        if self.width is None:
            self.width, self.height = img.shape[0], img.shape[1]
        elif (img.shape[0], img.shape[1]) != (self.width, self.height):
            raise ValueError(f"VideoManager: frame {self.frame_counter} is {img.shape[0]}x"
                             f"{img.shape[1]}, the video is {self.width}x{self.height}")
        imwrite(img, os.path.join(self.frame_directory, f"{self.frame_counter:07d}.png"))
        self.frame_counter += 1

    def write_frames(self, images):
        for img in images:
            self.write_frame(img)

    def _frames(self):
        return [os.path.join(self.frame_directory, f"{k:07d}.png") for k in range(self.frame_counter)]

    def make_video(self, mp4=True, gif=True):
        """Build the requested videos from the frames written so far; returns their paths."""
        import shutil
        import subprocess
        import warnings
        if not self.frame_counter:
            raise ValueError("VideoManager.make_video: no frames were written")
        out = []
        if gif:
            from fieldsim.gui import frames_to_gif
            out.append(frames_to_gif(self._frames(), self.get_output_filename(".gif"),
                                     fps=self.framerate))
        if mp4:
            ffmpeg = shutil.which("ffmpeg")
            if ffmpeg is None:
                warnings.warn("VideoManager.make_video: no ffmpeg on PATH, so no MP4 was written"
                              + (" (the GIF was)" if gif else ""), stacklevel=2)
            else:
                path = self.get_output_filename(".mp4")
                subprocess.run([ffmpeg, "-loglevel", "error", "-y", "-framerate", str(self.framerate),
                                "-i", os.path.join(self.frame_directory, "%07d.png"),
                                "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-pix_fmt", "yuv420p",
                                path], check=True)
                out.append(path)
        return out
