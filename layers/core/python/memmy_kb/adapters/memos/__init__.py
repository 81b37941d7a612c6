"""The MemOS adapter: the HTTP client (``client``), which of the domain's engine errors a failure is
(``errors``), the reply models (``models``) and where its API key comes from (``key``)."""
