import django.db.models.deletion
from django.db import migrations, models


def drop_mappings_without_version(apps, schema_editor):
    # Mappings were not written before versions could be edited; any stray row has no version
    # to belong to and cannot be placed.
    apps.get_model("taxonomy", "CategoryMapping").objects.filter(to_version__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("taxonomy", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="codebookversion",
            name="based_on",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="derived_versions",
                to="taxonomy.codebookversion",
            ),
        ),
        migrations.AddField(
            model_name="category",
            name="derived_from",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="derived",
                to="taxonomy.category",
            ),
        ),
        migrations.AddField(
            model_name="categorymapping",
            name="to_version",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="mappings_in",
                to="taxonomy.codebookversion",
            ),
        ),
        migrations.RunPython(drop_mappings_without_version, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="categorymapping",
            name="to_version",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="mappings_in",
                to="taxonomy.codebookversion",
            ),
        ),
        migrations.AlterModelOptions(
            name="categorymapping",
            options={
                "ordering": [
                    "to_version",
                    "from_category__dimension__position",
                    "from_category__position",
                ]
            },
        ),
        migrations.AddConstraint(
            model_name="categorymapping",
            constraint=models.UniqueConstraint(
                condition=models.Q(("to_category__isnull", True)),
                fields=("from_category", "to_version"),
                name="unique_category_removal",
            ),
        ),
        migrations.AddConstraint(
            model_name="categorymapping",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("kind", "remove"), ("to_category__isnull", True)),
                    models.Q(
                        models.Q(("kind", "remove"), _negated=True),
                        ("to_category__isnull", False),
                    ),
                    _connector="OR",
                ),
                name="category_mapping_target_unless_removed",
            ),
        ),
    ]
