"""The tool's own objects: containers, objects, blobs and index entries."""
