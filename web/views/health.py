"""/health/: the database and the broker, for load balancers and container health checks."""

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from common.health import health_report


# Outside ATOMIC_REQUESTS: opening the request's transaction would need the database, and a
# database that is down must give this view's 503, not a 500 before it runs.
@transaction.non_atomic_requests
@never_cache
@require_safe
def health(request: HttpRequest) -> JsonResponse:
    report = health_report()
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
