"""Every port of ``memmy_kb.domain.ports`` (each module of the package) has a fake in the contract suite, with its methods, run there."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Protocol

from memmy_kb.domain import ports
from memmy_kb.domain.ports.activity import ActivityLog, RateCounters
from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
from memmy_kb.domain.ports.connections import ConnectionStore
from memmy_kb.domain.ports.contents import ContentStore, ReplacementWrites
from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngine, KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import (
    CreateIntents,
    GrantReader,
    KnowledgeBaseStore,
    RecallSources,
)
from memmy_kb.domain.ports.mcp_auth import (
    AuthorizationStore,
    ClientMetadataFetcher,
    LoginProvider,
    TokenSigner,
)
from memmy_kb.domain.ports.mcp_hits import HitStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.ports.team_shares import ReachReader, TeamShareStore
from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.ports.uploads import UploadObjects, UploadRequeue
from tests.support.fakes import (
    FakeActivityLog,
    FakeBackendSlots,
    FakeCleanupExecutions,
    FakeCleanupStore,
    FakeConnectionStore,
    FakeContentStore,
    FakeCreateIntents,
    FakeEngines,
    FakeHitStore,
    FakeKnowledgeBaseStore,
    FakeKnowledgeEngine,
    FakeProfileStore,
    FakeRateCounters,
    FakeTeamStore,
    FakeUploadObjects,
    FakeUploadRequeue,
)

# Each port, the fake that stands for it here, and the fixture that runs it beside its adapter.
# ``KnowledgeEngine``'s fake runs beside ``MemosClient`` on the emulator (test_engine.py).
PORT_FAKES: dict[type, tuple[type, str]] = {
    GrantReader: (FakeKnowledgeBaseStore, "backend"),
    RecallSources: (FakeKnowledgeBaseStore, "backend"),
    KnowledgeBaseStore: (FakeKnowledgeBaseStore, "backend"),
    ReachReader: (FakeKnowledgeBaseStore, "backend"),
    TeamShareStore: (FakeKnowledgeBaseStore, "backend"),
    ContentStore: (FakeContentStore, "backend"),
    ReplacementWrites: (FakeContentStore, "backend"),
    ProfileStore: (FakeProfileStore, "backend"),
    ActivityLog: (FakeActivityLog, "backend"),
    RateCounters: (FakeRateCounters, "backend"),
    CleanupStore: (FakeCleanupStore, "backend"),
    CreateIntents: (FakeCreateIntents, "backend"),
    CleanupExecutions: (FakeCleanupExecutions, "pipeline"),
    UploadRequeue: (FakeUploadRequeue, "pipeline"),
    UploadObjects: (FakeUploadObjects, "bucket"),
    KnowledgeEngine: (FakeKnowledgeEngine, "engine"),
    KnowledgeEngines: (FakeEngines, "engines"),
    BackendSlots: (FakeBackendSlots, "backend"),
    TeamStore: (FakeTeamStore, "backend"),
    ConnectionStore: (FakeConnectionStore, "mcp_stores"),
    HitStore: (FakeHitStore, "mcp_stores"),
}

# The MCP authorization server's ports have no fake: no domain rule runs on them, only the api's Authlib
# server, which is tested on the real adapters (moto's table and KMS key, the dev identity provider as
# the login provider, a document served over https on loopback). Each names the module that does it.
TESTED_ON_THEIR_ADAPTERS: dict[type, str] = {
    AuthorizationStore: "tests/integration/mcp_auth/test_authorization_store.py",
    TokenSigner: "tests/integration/mcp_auth/test_kms_signer.py",
    LoginProvider: "tests/integration/mcp_auth/test_login_provider.py",
    ClientMetadataFetcher: "tests/unit/adapters/test_client_metadata.py",
}


def _protocol_members(port: type) -> dict[str, inspect.Signature]:
    members: dict[str, inspect.Signature] = {}
    for klass in reversed(port.__mro__):
        if getattr(klass, "_is_protocol", False) and klass is not Protocol:
            members.update(
                {
                    name: inspect.signature(value)
                    for name, value in vars(klass).items()
                    if inspect.isfunction(value) and not name.startswith("_")
                }
            )
    return members


def _fixtures_the_cases_take() -> set[str]:
    """The argument names of every case of the suite, read from each module's source."""
    taken: set[str] = set()
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                taken |= {argument.arg for argument in node.args.args}
    return taken


def test_every_port_in_domain_ports_has_a_fake_with_its_methods_run_in_this_suite() -> None:
    modules = [importlib.import_module(m.name) for m in pkgutil.iter_modules(ports.__path__, f"{ports.__name__}.")]
    assert modules, "the ports package has no module: the listing is wrong"
    declared = {
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__ and getattr(value, "_is_protocol", False)
    }

    covered = set(PORT_FAKES) | set(TESTED_ON_THEIR_ADAPTERS)
    assert declared == covered, f"ports without a fake here: {sorted(p.__name__ for p in declared - covered)}"
    root = Path(__file__).parents[3]
    assert all((root / module).is_file() for module in TESTED_ON_THEIR_ADAPTERS.values())
    taken = _fixtures_the_cases_take()
    for port, (fake, fixture) in PORT_FAKES.items():
        for name, signature in _protocol_members(port).items():
            assert hasattr(fake, name), f"{fake.__name__} lacks {port.__name__}.{name}"
            theirs = [p for p in inspect.signature(getattr(fake, name)).parameters if p != "self"]
            assert theirs == [p for p in signature.parameters if p != "self"], f"{fake.__name__}.{name}"
        assert fixture in taken, f"no contract case uses the {fixture!r} fixture of {port.__name__}"
