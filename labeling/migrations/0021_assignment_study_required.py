from django.db import migrations, models

# Apart from 0020: on PostgreSQL a table cannot be altered in the transaction that updated
# rows under a deferred foreign key.


class Migration(migrations.Migration):

    dependencies = [
        ("labeling", "0020_assignment_study"),
    ]

    operations = [
        migrations.AlterField(
            model_name="assignment",
            name="study",
            field=models.ForeignKey(
                db_index=False,
                editable=False,
                on_delete=models.deletion.CASCADE,
                related_name="+",
                to="labeling.study",
            ),
        ),
        migrations.RemoveIndex(model_name="assignment", name="assignment_queue_order"),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                fields=["annotator", "study", "item"], name="assignment_queue_order"
            ),
        ),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                fields=["annotator", "study", "status"], name="assignment_progress"
            ),
        ),
    ]
