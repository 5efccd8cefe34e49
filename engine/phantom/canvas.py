"""The canvas: the fixed frame in which one knee is drawn before it is placed on a film.

A knee is drawn as a right knee, medial side on the viewer's right (+x), joint line at row
``CY``. The knee box is a square of ``BOX_SIDE`` centred on the joint; femur and tibia shafts
run to the canvas edges and are continued beyond them by edge replication when the canvas is
placed on the film.
"""

from __future__ import annotations

import numpy as np

CANVAS_H, CANVAS_W = 352, 288
CX = (CANVAS_W - 1) / 2.0  # on the mirror axis, so flipping keeps the box in place
CY = 176.0
BOX_SIDE = 200.0
# Rows around the joint line where lesions live; drawing them only here saves time.
WIN_R0, WIN_R1 = int(CY - 72), int(CY + 48)

#: Row and column coordinates of every canvas pixel (read-only), and the columns alone.
YY, XX = np.mgrid[0:CANVAS_H, 0:CANVAS_W].astype(np.float32)
YY.setflags(write=False)
XX.setflags(write=False)
XS = np.arange(CANVAS_W, dtype=np.float32)
