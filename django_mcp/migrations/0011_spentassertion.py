from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_mcp', '0010_task_worker'),
    ]

    operations = [
        migrations.CreateModel(
            name='SpentAssertion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('checksum', models.CharField(max_length=64, unique=True)),
                ('expires', models.DateTimeField(db_index=True)),
            ],
            options={
                'verbose_name': 'spent identity assertion',
                'verbose_name_plural': 'spent identity assertions',
            },
        ),
    ]
