"""Existing clients keep working: every token of DRF's `rest_framework.authtoken` becomes an
ApiToken named "migrated" with the same key, stored as its hash, and the plaintext row is then
deleted. DRF's app is no longer installed, so its table is read with plain SQL when it exists
(a database made before this change) and the step does nothing on a fresh database. The table
itself may stay behind, empty.
"""

import hashlib

from django.db import migrations

DRF_TABLE = "authtoken_token"


def copy_drf_tokens(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if DRF_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("accounts", "ApiToken")
    table, key, user_id, created = map(
        connection.ops.quote_name, [DRF_TABLE, "key", "user_id", "created"]
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key}, {user_id}, {created} FROM {table}")  # noqa: S608
        rows = cursor.fetchall()
    for key, user_id, created in rows:
        key_hash = hashlib.sha256(key.encode()).hexdigest()
        ApiToken.objects.get_or_create(
            key_hash=key_hash,
            defaults={
                "user_id": user_id,
                "name": "migrated",
                "key_prefix": key[:8],
                "created_at": created,
            },
        )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    # Forward only in effect: the plaintext keys are gone once copied, by design.
    operations = [migrations.RunPython(copy_drf_tokens, migrations.RunPython.noop)]
