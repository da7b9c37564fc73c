"""What memex says into an agent's context: whether a prompt is worth a recall (`gate`), the answers computed
from the store (`answers`) and their compact text within a token budget (`render`)."""
