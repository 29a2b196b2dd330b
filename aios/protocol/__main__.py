"""``python -m aios.protocol``: regenerate the JSON Schemas in ``aios/protocol/schemas/``."""

from aios.protocol.schemas import SCHEMA_DIR, schema_models, write_schemas

write_schemas()
print(f"wrote {len(schema_models())} schemas to {SCHEMA_DIR}")
