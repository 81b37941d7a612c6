"""The MemOS adapter: the HTTP client (``client``), its error families (``errors``), the reply models
(``models``) and where its API key comes from (``key``)."""
