from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def studies_copy(apps, schema_editor):
    """Every assignment's study: its item's."""
    StudyItem = apps.get_model("labeling", "StudyItem")
    Assignment = apps.get_model("labeling", "Assignment")
    Assignment.objects.update(
        study_id=Subquery(StudyItem.objects.filter(pk=OuterRef("item_id")).values("study_id"))
    )


class Migration(migrations.Migration):

    dependencies = [
        ("labeling", "0019_item_holders"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="study",
            field=models.ForeignKey(
                db_index=False,
                editable=False,
                null=True,
                on_delete=models.deletion.CASCADE,
                related_name="+",
                to="labeling.study",
            ),
        ),
        migrations.RunPython(studies_copy, migrations.RunPython.noop, elidable=True),
    ]
