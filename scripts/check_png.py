#!/usr/bin/env python3
"""Checks a screenshot PNG (pure Python: zlib + struct, no imaging library).

usage: check_png.py FILE WIDTH HEIGHT [MIN_COLORS]
Decodes the image (8-bit RGB/RGBA, not interlaced), checks its size, and that it is not blank:
at least MIN_COLORS (default 16) distinct colors and at least 2% of the pixel rows not uniform.
Prints one summary line; exit 0 when it passes, 1 when not.
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG file')
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, = struct.unpack('>I', data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat.append(body)
    width, height, depth, color, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        raise ValueError('unsupported PNG (depth %d, color type %d, interlace %d)' % (depth, color, interlace))
    return width, height, channels, zlib.decompress(b''.join(idat))


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def unfilter_rows(width, height, bpp, raw):
    """Yields the reconstructed rows (bytes)."""
    stride = width * bpp
    prev = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                if i >= bpp:
                    line[i] = (line[i] + paeth(line[i - bpp], prev[i], prev[i - bpp])) & 255
                else:
                    line[i] = (line[i] + prev[i]) & 255
        elif kind != 0:
            raise ValueError('bad filter type %d in row %d' % (kind, y))
        prev = bytes(line)
        yield prev


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    min_colors = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    width, height, bpp, raw = read_png(path)
    colors, busy_rows = set(), 0
    for row in unfilter_rows(width, height, bpp, raw):
        pixels = {row[i:i + bpp] for i in range(0, len(row), bpp)}
        busy_rows += len(pixels) > 1
        if len(colors) < 100000:
            colors |= pixels
    busy = busy_rows / max(height, 1)
    print('%s: %dx%d, %d distinct colors, %.1f%% of rows not uniform' % (path, width, height, len(colors), 100 * busy))
    ok = (width, height) == (want_w, want_h) and len(colors) >= min_colors and busy >= 0.02
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
