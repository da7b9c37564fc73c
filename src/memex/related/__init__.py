"""find-related: sessions and turns that worked on the same files (access-pattern centroids)."""

from memex.related.centroids import RefreshReport, refresh_patterns
from memex.related.find import related_sessions, related_turns

__all__ = ["RefreshReport", "refresh_patterns", "related_sessions", "related_turns"]
