"""The ports: what the domain needs from storage, MemOS and the upload bucket, as ``typing.Protocol``s, one
module per what they store (docs/architecture.md, "Ports and fakes").

Domain functions take these, never a concrete adapter, so unit tests hand in small typed fakes and the
handlers hand in the DynamoDB, MemOS and S3 adapters (``memmy_kb.composition``). One protocol per
aggregate of the table: knowledge bases and their grants, a KB's contents (folders, files, uploads), and
profiles. The values they carry and the errors they raise are the domain's own: writes report what
stopped them with the storage errors of ``memmy_kb.domain.storage`` (``AlreadyExists``, ``ItemMissing``,
``ConditionFailed``, ``RequestSeen``), the knowledge engine speaks ``memmy_kb.domain.engine``; the adapters
translate into these, and the domain translates them into refusals.

Empty on purpose: importing one module loads no other.
"""
