"""A folder kept in sync with a knowledge base (``memmy-kb sync DIR KB``, the desktop's linked folders).

One pass makes the KB match the folder: ``local`` reads the folder (ignore rules, sizes, hashes cached by
size and modification time), ``remote`` reads the KB's tree, ``plan`` decides what to do (a pure function
of the two and of ``store``'s record of what this folder's sync brought in), ``execute`` does it,
recording each intent before it is sent so an interrupted pass resumes without uploading twice.
``links`` runs passes for the desktop service's linked folders, watched with ``watchfiles``.
docs/sync.md has the rules and their tests.
"""
