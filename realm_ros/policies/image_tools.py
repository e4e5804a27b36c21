"""Image preparation shared by the VLA clients: aspect-preserving resize with zero padding."""

from __future__ import annotations

import numpy as np


def resize_with_pad(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize an (H, W, 3) uint8 RGB image to (height, width, 3) keeping its aspect ratio.

    The image is scaled by the largest factor that fits, then centred with black (zero) bands,
    the convention of ``tf.image.resize_with_pad`` that openpi's DROID clients follow (a 180x320
    DROID frame becomes 224x224 with 49 black rows above and below the 126x224 picture).
    Area interpolation is used when shrinking (it averages like PIL's antialiased bilinear),
    linear when enlarging.

    Raises:
        ValueError: ``image`` is not (H, W, 3) or the target size is not positive.
    """
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f'expected an (H, W, 3) image, got shape {image.shape}')
    if height <= 0 or width <= 0:
        raise ValueError(f'target size must be positive, got {height}x{width}')
    if image.dtype != np.uint8:
        # Float images in [0, 1] (some renderers) become uint8, which is what the servers expect.
        image = np.clip(np.asarray(image, dtype=float) * 255.0, 0, 255).astype(np.uint8) \
            if np.issubdtype(image.dtype, np.floating) else image.astype(np.uint8)
    cur_h, cur_w = image.shape[:2]
    if (cur_h, cur_w) == (height, width):
        return image
    ratio = max(cur_w / width, cur_h / height)
    new_h = max(1, int(cur_h / ratio))
    new_w = max(1, int(cur_w / ratio))
    import cv2  # here, so a model host without OpenCV can import the torch policy's module

    shrinking = new_h < cur_h or new_w < cur_w
    resized = cv2.resize(np.ascontiguousarray(image), (new_w, new_h),
                         interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)
    out = np.zeros((height, width, 3), dtype=np.uint8)
    top = (height - new_h) // 2
    left = (width - new_w) // 2
    out[top:top + new_h, left:left + new_w] = resized
    return out
