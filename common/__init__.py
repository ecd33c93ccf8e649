"""Utilities every layer shares and that know nothing of BERT: files written atomically
and inputs never overwritten (`file_io`), readable I/O errors (`errors`), progress lines
with rate and ETA (`progress`), what the CPU can do (`cpu`).

Pipeline position: the ground floor. It imports nothing else of the project; every other
package (`modeling`, `text`, `data_prep`, `training`, `serving`, `tasks`, `cli`) may
import it.
"""
